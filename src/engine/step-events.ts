/**
 * The events of the step being planned — prefill starts and preemptions — kept in planning order
 * and emitted only once planning is done, so a listener never sees (or mutates) a half-planned
 * step. Reused arrays: planning a step allocates nothing.
 */
import type { Ms } from '../core/request/units.ts';
import type { EngineListener, EngineRequest, PreemptionKind } from './engine-types.ts';
import { type Seq, SeqState } from './sequence.ts';
import type { TokenRuns } from './token-runs.ts';

/** What happened to a sequence in the planned step: its prefill started, or it was preempted. */
export type StepEventKind = 'prefill' | PreemptionKind;

export class StepEvents<R extends EngineRequest> {
  private readonly kinds: StepEventKind[] = [];
  private readonly seqs: Seq<R>[] = [];
  private count = 0;

  record(kind: StepEventKind, s: Seq<R>): void {
    this.kinds[this.count] = kind;
    this.seqs[this.count] = s;
    this.count++;
  }

  clear(): void {
    this.count = 0;
  }

  /**
   * Emits the recorded events, in planning order, and clears them; a preempted sequence's run
   * of tokens (token-runs.ts) is reported first.
   */
  flush(listener: EngineListener<R>, atMs: Ms, runs: TokenRuns<R> | null): void {
    for (let i = 0; i < this.count; i++) {
      const s = this.seqs[i];
      // A listener may have cancelled it while handling an earlier event of this step.
      if (s.state === SeqState.Cancelled) continue;
      const kind = this.kinds[i];
      if (kind === 'prefill') {
        listener.onPrefillStart(s.req, atMs);
        continue;
      }
      runs?.end(s);
      listener.onPreempt(s.req, atMs, kind);
    }
    this.count = 0;
  }
}
