/**
 * How long one engine iteration of a given shape takes: the port through which policy code
 * predicts prefill and decode times without knowing the engine. The engine's timing profiles
 * satisfy it as they are.
 */
import type { Ms, Tokens } from '../request/units.ts';

/** What one iteration computes. */
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

export interface StepTimeModel {
  stepMs(shape: StepShape): Ms;
}
