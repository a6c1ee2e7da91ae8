/**
 * A prompt alone on an otherwise idle replica: how long its whole prefill takes, and how long
 * its heaviest step takes — what a stream beside it waits through. Each step prefills one chunk
 * of at most `seqChunkTokens` (the step's budget, or vLLM's long_prefill_token_threshold).
 */
import type { Ms, Tokens } from '../request/units.ts';
import type { StepShape } from '../ports/step-time.ts';
import { seqChunkTokens, type FleetSpec } from '../fleet/fleet-spec.ts';

/** Prompt sizes whose prefill time is remembered at once (a pure function of the size). */
const PREFILL_MEMO = 4_096;
/**
 * The most prompt tokens costed chunk by chunk: 2^20, eight times Llama 3.1's 131,072 context.
 * Longer counts are a deep queue's pending prompts, summed (the queue work routing weighs): at
 * this length's rate a call stays a lookup, where chunk by chunk it grew with the queue.
 */
const COSTED_PREFILL_TOKENS = 1 << 20;

export class PrefillTimes {
  private readonly spec: FleetSpec;
  /** The most prompt tokens one sequence prefills in a step. */
  readonly seqChunk: Tokens;
  private readonly memo = new Map<Tokens, Ms>();
  private readonly shape: StepShape = {
    prefillTokens: 0,
    prefillSeqs: 1,
    prefillAttnWork: 0,
    decodeSeqs: 0,
    decodeContextTokens: 0,
  };

  constructor(spec: FleetSpec) {
    this.spec = spec;
    this.seqChunk = seqChunkTokens(spec);
  }

  /**
   * Its prefill time, all chunks of at most `chunk` tokens (a staged prompt's pieces; default:
   * the engine's). Past COSTED_PREFILL_TOKENS, at that length's rate per token.
   */
  prefillMs(promptTokens: Tokens, chunk = this.seqChunk): Ms {
    if (promptTokens > COSTED_PREFILL_TOKENS) {
      return (this.prefillMs(COSTED_PREFILL_TOKENS, chunk) * promptTokens) / COSTED_PREFILL_TOKENS;
    }
    if (chunk !== this.seqChunk) return this.chunkedMs(promptTokens, chunk);
    const known = this.memo.get(promptTokens);
    if (known !== undefined) return known;
    // Routing asks for the same few sizes across a fleet (one prompt after each replica's hit,
    // each replica's pending prompts): a bounded memo spares the profile evaluations.
    if (this.memo.size >= PREFILL_MEMO) this.memo.clear();
    const total = this.chunkedMs(promptTokens, chunk);
    this.memo.set(promptTokens, total);
    return total;
  }

  /** Its heaviest step, at most: one chunk (of at most `chunk` tokens) attending to it all. */
  stallMs(promptTokens: Tokens, chunk = this.seqChunk): Ms {
    if (promptTokens <= chunk) return this.prefillMs(promptTokens);
    return this.chunkMs(chunk, promptTokens);
  }

  private chunkedMs(promptTokens: Tokens, chunk: Tokens): Ms {
    let total = 0;
    for (let done = 0; done < promptTokens; done += chunk) {
      const size = Math.min(promptTokens - done, chunk);
      total += this.chunkMs(size, done + size);
    }
    return total;
  }

  /** A step prefilling `chunk` tokens that attend to the first `attended` of the prompt. */
  private chunkMs(chunk: Tokens, attended: Tokens): Ms {
    const s = this.shape;
    s.prefillTokens = chunk;
    s.prefillAttnWork = chunk * attended;
    return this.spec.stepTime.stepMs(s);
  }
}
