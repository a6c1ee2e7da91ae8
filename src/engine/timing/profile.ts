/**
 * A timing profile turns the shape of one engine iteration into its duration. Profiles are
 * data (fitted from measured operator times) evaluated by a small model; the engine never
 * knows which kind it holds.
 */
import type { Ms, Tokens } from '../../core/request/units.ts';

/** What one iteration computes. Built by the engine for every step; keep it allocation-free. */
export interface StepShape {
  /** Prompt tokens computed this step, summed over prefill chunks. */
  prefillTokens: Tokens;
  /** Number of prefill chunks (sequences prefilling) this step. */
  prefillSeqs: number;
  /** Σ over chunks of chunk × (tokens already cached for that sequence + chunk): attention work of prefill. */
  prefillAttnWork: number;
  /** Sequences that each decode one token this step. */
  decodeSeqs: number;
  /** Σ over decoding sequences of their context length (tokens in KV). */
  decodeContextTokens: Tokens;
}

export interface TimingProfile {
  /** e.g. `llama-3-8b/h100/tp1` or `const:step_ms=10`. */
  readonly name: string;
  /** Duration of an iteration of this shape; > 0 whenever the shape holds any work. */
  stepMs(shape: StepShape): Ms;
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
