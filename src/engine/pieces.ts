/**
 * A sequence's prompt chunk in a step: what the engine's cap (vLLM's
 * long_prefill_token_threshold) and the step's budget allow, and for a staged prompt
 * (`EngineRequest.pieceTokens`) no further than its current piece. A staged prompt arrives a
 * piece at a time: each piece is its own request, sent when the one before has ended, so the
 * step after a piece ends runs without it.
 */
import type { EngineRequest } from './engine-types.ts';
import type { Seq } from './sequence.ts';

/** The prompt tokens `s` may compute within `budget` under the engine's `chunkCap`. */
export function chunkOf<R extends EngineRequest>(s: Seq<R>, budget: number, chunkCap: number) {
  const piece = s.req.pieceTokens;
  const left = s.target - s.computed;
  const end =
    piece === undefined ? left : (Math.floor(s.computed / piece) + 1) * piece - s.computed;
  return Math.min(left, end, budget, chunkCap);
}

/** `s` computes `tokens` more of its prompt this step: a staged piece that ends rests after. */
export function endsPiece<R extends EngineRequest>(s: Seq<R>, tokens: number): void {
  const piece = s.req.pieceTokens;
  const done = s.computed + tokens;
  if (piece !== undefined && done < s.target && done % piece === 0) s.pieceRest = true;
}
