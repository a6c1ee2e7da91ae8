/**
 * What the scheduler predicts with the timing profile and the host link: how many prompt tokens
 * a step may carry under the iteration-time cap, whether a sequence's KV is cheaper moved to
 * host and back than computed again (`auto` preemption and tool pauses), and what a decode step
 * of the batch takes (slack-aware victims). Allocates nothing: one reused probe shape.
 */
import type { Ms } from '../core/request/units.ts';
import type { EngineConfig, EngineRequest } from './engine-types.ts';
import type { Seq } from './sequence.ts';
import { clearShape, emptyShape, type StepShape, type TimingProfile } from './timing/profile.ts';

/** Prompt tokens a step may always carry under the iteration-time cap: prefills progress. */
const MIN_PREFILL_TOKENS = 64;

export class StepCosts {
  private readonly profile: TimingProfile;
  private readonly swapMsPerBlock: Ms;
  private readonly probe: StepShape = emptyShape();

  constructor(profile: TimingProfile, swapMsPerBlock: Ms) {
    this.profile = profile;
    this.swapMsPerBlock = swapMsPerBlock;
  }

  /**
   * A step's token budget under the iteration-time cap: the running decodes (within the decode
   * budget) plus the most prompt
   * tokens (at least MIN_PREFILL_TOKENS) that keep the step, predicted as one chunk beside those
   * decodes (attending to as much prompt as the deepest prefill under way has computed), within
   * `maxIterationMs`; never over `maxBatchedTokens`.
   */
  iterationBudget(
    running: readonly Seq<EngineRequest>[],
    limits: Pick<EngineConfig, 'maxBatchedTokens' | 'maxIterationMs' | 'decodeTokenBudget'>,
  ): number {
    const max = limits.maxBatchedTokens;
    const capMs = limits.maxIterationMs ?? Infinity;
    // Under a decode budget only the front decodes are in the step: the rest leave it time.
    const maxDecodes = limits.decodeTokenBudget ?? Infinity;
    const p = this.probe;
    p.decodeSeqs = 0;
    p.decodeContextTokens = 0;
    // A chunk attends to the prompt already computed: taken at the deepest prefill under way.
    let cached = 0;
    for (const s of running) {
      if (s.prefilling) {
        if (s.computed > cached) cached = s.computed;
        continue;
      }
      if (p.decodeSeqs === maxDecodes) continue;
      p.decodeSeqs++;
      p.decodeContextTokens += s.computed + 1;
    }
    const fits = (tokens: number) => {
      p.prefillTokens = tokens;
      p.prefillSeqs = tokens > 0 ? 1 : 0;
      p.prefillAttnWork = tokens * (cached + tokens);
      return this.profile.stepMs(p) <= capMs;
    };
    let lo = Math.min(MIN_PREFILL_TOKENS, max);
    let hi = Math.max(lo, max - p.decodeSeqs);
    if (fits(hi)) lo = hi;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (fits(mid)) lo = mid;
      else hi = mid - 1;
    }
    return Math.min(max, p.decodeSeqs + lo);
  }

  /** A decode step of every sequence in `running` at its context now (slack-aware victims). */
  decodeStepMs(running: readonly Seq<EngineRequest>[]): Ms {
    const p = this.probe;
    clearShape(p);
    for (const s of running) {
      p.decodeSeqs++;
      p.decodeContextTokens += s.computed;
    }
    return this.profile.stepMs(p);
  }

  /**
   * Whether moving `v`'s blocks out and back is predicted faster than what prefilling its
   * computed tokens again adds to a step (the step's own fixed costs aside).
   */
  swapIsCheaper(v: Seq<EngineRequest>): boolean {
    const p = this.probe;
    clearShape(p);
    p.decodeSeqs = 1;
    p.decodeContextTokens = 1;
    const baseMs = this.profile.stepMs(p);
    p.prefillTokens = v.computed;
    p.prefillSeqs = 1;
    p.prefillAttnWork = v.computed * v.computed;
    const recomputeMs = this.profile.stepMs(p) - baseMs;
    return 2 * v.blocks * this.swapMsPerBlock < recomputeMs;
  }
}
