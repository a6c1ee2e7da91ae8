/**
 * What a scheduled sequence adds to the shape of the step being planned — the quantities a
 * timing profile prices: prompt tokens and the attention work of their chunk, or a decode and
 * the context its one token attends to. Running sequences and newly admitted ones count alike;
 * the shape is one reused object, so adding to it allocates nothing.
 */
import type { EngineRequest } from './engine-types.ts';
import type { Seq } from './sequence.ts';
import type { StepShape } from './timing/profile.ts';

export function addToShape(shape: StepShape, s: Seq<EngineRequest>, tokens: number): void {
  if (s.prefilling) {
    shape.prefillTokens += tokens;
    shape.prefillSeqs++;
    shape.prefillAttnWork += tokens * (s.computed + tokens);
  } else {
    shape.decodeSeqs++;
    // The new token attends to everything in KV and to itself.
    shape.decodeContextTokens += s.computed + 1;
  }
}
