/**
 * What a replica's live sequences (running, waiting, paused) hold still to do, summed as they
 * come and go rather than walked: a report samples it every simulated second, and walking a
 * queue of a million sequences each time was most of such a run's cost. Main rule: the tokens
 * the live sequences have emitted are all the replica emitted less what the ended ones had, so
 * nothing changes per token.
 */
import type { Tokens } from '../core/request/units.ts';
import type { Seq } from './sequence.ts';

export interface LiveWork {
  readonly seqs: number;
  /** Output tokens they have still to generate. */
  readonly outputTokens: Tokens;
  /** Their context now: prompt, tool results and emitted tokens. */
  readonly contextTokens: Tokens;
}

type Counted = Pick<Seq<never>, 'input' | 'output' | 'toolTokens' | 'emitted'>;

export class LiveTotals {
  private seqs = 0;
  /** Σ output: what each generates in all. */
  private output = 0;
  /** Σ prompt and tool-result tokens. */
  private context = 0;
  /** Σ emitted of the sequences that ended. */
  private endedEmitted = 0;

  added(s: Counted): void {
    this.seqs++;
    this.output += s.output;
    this.context += s.input + s.toolTokens;
  }

  /** A tool's result joined a live sequence's context. */
  grew(tokens: Tokens): void {
    this.context += tokens;
  }

  /** `s` finished or was cancelled, its counts real. */
  ended(s: Counted): void {
    this.seqs--;
    this.output -= s.output;
    this.context -= s.input + s.toolTokens;
    this.endedEmitted += s.emitted;
  }

  /** With `generated` tokens emitted by the replica in all. */
  work(generated: Tokens): LiveWork {
    const emitted = generated - this.endedEmitted;
    return {
      seqs: this.seqs,
      outputTokens: this.output - emitted,
      contextTokens: this.context + emitted,
    };
  }
}
