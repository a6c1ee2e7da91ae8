/**
 * Chained block hashes of a prompt's text, for prefix caching and prefix-aware routing without
 * a tokenizer: the text is cut into blocks of `blockTokens × CHARS_PER_TOKEN` characters (the
 * token estimate's rule), and block j's hash covers block j and every block before it, as
 * vLLM's block hashes do. Main rule: only full blocks inside the prompt's estimated token count
 * are hashed, so two prompts share hash j exactly when they share the first j + 1 blocks.
 */
import { CHARS_PER_TOKEN } from './prompt-tokens.ts';

export interface PromptBlockHashes {
  readonly blockTokens: number;
  readonly hashes: readonly string[];
}

export function promptBlockHashes(
  text: string,
  promptTokens: number,
  blockTokens: number,
): PromptBlockHashes {
  const blockChars = blockTokens * CHARS_PER_TOKEN;
  const blocks = Math.min(
    Math.floor(text.length / blockChars),
    Math.floor(promptTokens / blockTokens),
  );
  const hashes: string[] = [];
  let a = 0x811c9dc5;
  let b = 0x01000193;
  for (let j = 0; j < blocks; j++) {
    // Two FNV-1a-style lanes (different offsets and primes): 64 bits, so unrelated prompts do
    // not collide.
    for (let i = j * blockChars; i < (j + 1) * blockChars; i++) {
      const c = text.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193) >>> 0;
      b = Math.imul(b ^ c, 0x5bd1e995) >>> 0;
    }
    hashes.push(a.toString(16).padStart(8, '0') + b.toString(16).padStart(8, '0'));
  }
  return { blockTokens, hashes };
}
