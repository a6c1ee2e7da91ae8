/**
 * A timing profile turns the shape of one engine iteration into its duration. Profiles are
 * data (fitted from measured operator times) evaluated by a small model; the engine never
 * knows which kind it holds.
 */
import type { Ms } from '../../core/request/units.ts';
import type { StepShape } from '../../core/ports/step-time.ts';

export type { StepShape };

export interface TimingProfile {
  /** e.g. `llama-3-8b/h100/tp1` or `const:step_ms=10`. */
  readonly name: string;
  /** Duration of an iteration of this shape; > 0 whenever the shape holds any work. */
  stepMs(shape: StepShape): Ms;
}

/** Zeroes `s` in place (a step planned into a reused shape allocates nothing). */
export function clearShape(s: StepShape): void {
  s.prefillTokens = 0;
  s.prefillSeqs = 0;
  s.prefillAttnWork = 0;
  s.decodeSeqs = 0;
  s.decodeContextTokens = 0;
}

export function emptyShape(): StepShape {
  return {
    prefillTokens: 0,
    prefillSeqs: 0,
    prefillAttnWork: 0,
    decodeSeqs: 0,
    decodeContextTokens: 0,
  };
}
