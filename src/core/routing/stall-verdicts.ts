/**
 * Whether a stall of n slow steps is expected to push more of a replica's streams past their p99
 * gap than the policy allows (`stall_risk`): each stream's chance of ending before it has enough
 * gaps to spare the stall (its length so far and its class's lengths, `gap-tolerance.ts`).
 *
 * While a placement pass is open (`beginPass`), each replica's verdict on n is remembered. The
 * pass tries candidate after candidate against accounts no placement has changed yet, and the
 * verdict depends only on the replica's streams and n, so it is the same for every candidate.
 * Without it a pass of 16 long prompts over 64 replicas weighed each replica's streams 16 times.
 */
import type { ReplicaAccount } from '../fleet/replica-ledger.ts';
import { stallRisk } from './gap-tolerance.ts';

export class StallVerdicts {
  /** Expected streams a stall may push past their p99 gap objective. */
  readonly limit: number;
  readonly #verdicts = new Map<ReplicaAccount, boolean[]>();
  #passOpen = false;

  constructor(limit: number) {
    this.limit = limit;
  }

  /** Opens a placement pass: until `endPass`, no account changes. */
  beginPass(): void {
    this.#passOpen = true;
  }

  /** Closes the pass, before anything is placed; what it remembered is dropped. */
  endPass(): void {
    this.#passOpen = false;
    this.#verdicts.clear();
  }

  tooRisky(a: ReplicaAccount, steps: number): boolean {
    const known = this.#passOpen ? this.#verdicts.get(a) : undefined;
    const verdict = known?.[steps];
    if (verdict !== undefined) return verdict;
    let risk = 0;
    let risky = false;
    for (const e of a.entries) {
      if (e.itlSloMs === Infinity) continue;
      // Each of its choices is a stream the stall reaches.
      risk += e.seqs * stallRisk(e.streamed, e.slowGaps + steps, e.capTokens, e.lengths);
      if (risk > this.limit) {
        risky = true;
        break;
      }
    }
    if (this.#passOpen) {
      const verdicts = known ?? [];
      verdicts[steps] = risky;
      if (known === undefined) this.#verdicts.set(a, verdicts);
    }
    return risky;
  }
}
