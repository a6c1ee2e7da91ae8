/**
 * Chained block hashes of a prompt's text, for prefix caching and prefix-aware routing without
 * a tokenizer: the text is cut into blocks of `blockTokens` tokens by the token estimate's
 * weights (text-weight.ts: 64 characters of Latin text for 16 tokens), and block j's hash
 * covers block j and every block before it, as vLLM's block hashes do. Main rule: only full
 * blocks inside the prompt's estimated token count are hashed, so two prompts share hash j
 * exactly when they share the first j + 1 blocks.
 *
 * A chat or token prompt is hashed as its rendering (renderChatPrompt, renderCompletionPrompt)
 * would be, fed in pieces rather than built: the gateway hashes every request it reads, refused
 * or not, and a built prompt is one more copy of the body.
 *
 * A request's `cache_salt` (vLLM's: prompts share cached blocks only under the same salt) starts
 * the chain: every hash of a salted prompt differs from the unsalted one's and from another
 * salt's, and the blocks are cut where they would be without it.
 */
import type { CompletionPrompt } from './completion-request.ts';
import { charUnits, isLatinText, LATIN_UNITS, UNITS_PER_TOKEN } from './text-weight.ts';
import { chatPromptPieces, TOKEN_ID_RADIX, type ChatPrompt } from './prompt-tokens.ts';

export interface PromptBlockHashes {
  readonly blockTokens: number;
  readonly hashes: readonly string[];
}

export function promptBlockHashes(
  text: string,
  promptTokens: number,
  blockTokens: number,
  salt?: string | null,
): PromptBlockHashes {
  const hasher = new BlockHasher(blockTokens, promptTokens, salt);
  hasher.text(text);
  return { blockTokens, hashes: hasher.hashes };
}

/** The block hashes of renderChatPrompt(prompt). */
export function chatBlockHashes(
  prompt: ChatPrompt,
  promptTokens: number,
  blockTokens: number,
  salt?: string | null,
): PromptBlockHashes {
  const hasher = new BlockHasher(blockTokens, promptTokens, salt);
  chatPromptPieces(prompt, (piece) => hasher.text(piece));
  return { blockTokens, hashes: hasher.hashes };
}

/** The block hashes of renderCompletionPrompt(prompt). */
export function completionBlockHashes(
  prompt: CompletionPrompt,
  promptTokens: number,
  blockTokens: number,
  salt?: string | null,
): PromptBlockHashes {
  if (typeof prompt === 'string') return promptBlockHashes(prompt, promptTokens, blockTokens, salt);
  const hasher = new BlockHasher(blockTokens, promptTokens, salt);
  hasher.tokenIds(prompt);
  return { blockTokens, hashes: hasher.hashes };
}

/** The lanes' offsets. */
const OFFSET_A = 0x811c9dc5 | 0;
const OFFSET_B = 0x01000193;

/**
 * Two FNV-1a-style lanes (different offsets and primes) over UTF-16 units, 64 bits in all so
 * unrelated prompts do not collide, a hash closed at each block's end.
 */
class BlockHasher {
  readonly hashes: string[] = [];
  /** A block's weight (text-weight.ts): `blockTokens` tokens. */
  private readonly blockUnits: number;
  /** The full blocks within the prompt's token count: where hashing stops. */
  private readonly blocks: number;
  private a = OFFSET_A;
  private b = OFFSET_B;
  /** The weight hashed into the open block. */
  private filled = 0;

  constructor(blockTokens: number, promptTokens: number, salt?: string | null) {
    this.blockUnits = blockTokens * UNITS_PER_TOKEN;
    this.blocks = Math.floor(promptTokens / blockTokens);
    if (salt != null) this.salt(salt);
  }

  /** Mixes `salt` into both lanes before the prompt's first character, filling no block. */
  private salt(salt: string): void {
    let { a, b } = this;
    for (let i = 0; i < salt.length; i++) {
      const c = salt.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995);
    }
    // A salt's end, so that salt "ab" and prompt "c…" differ from salt "a" and prompt "bc…".
    this.a = Math.imul(a ^ 0xffff, 0x01000193);
    this.b = Math.imul(b ^ 0xffff, 0x5bd1e995);
  }

  /** A block closes once it holds `blockTokens` tokens' weight, never inside a surrogate pair. */
  text(s: string): void {
    const latin = isLatinText(s);
    const blockUnits = this.blockUnits;
    let { a, b, filled } = this;
    let i = 0;
    while (i < s.length && this.hashes.length < this.blocks) {
      // Latin text, each character of one weight: the run that fills the block, hashed at once.
      // Any other: a character at a time, a surrogate pair's two units one character.
      let end: number;
      if (latin) {
        end = Math.min(s.length, i + Math.ceil((blockUnits - filled) / LATIN_UNITS));
        filled += (end - i) * LATIN_UNITS;
      } else {
        const code = s.codePointAt(i) as number;
        end = i + (code > 0xffff ? 2 : 1);
        filled += charUnits(code);
      }
      for (; i < end; i++) {
        const c = s.charCodeAt(i);
        a = Math.imul(a ^ c, 0x01000193);
        b = Math.imul(b ^ c, 0x5bd1e995);
      }
      if (filled >= blockUnits) {
        this.hashes.push(hex64(a, b));
        filled = 0;
      }
    }
    this.a = a;
    this.b = b;
    this.filled = filled;
  }

  /**
   * Token ids, as renderCompletionPrompt writes them: CHARS_PER_TOKEN (4) base-36 digits each,
   * read as two digit pairs from a table. A block holds whole ids, so it closes between ids;
   * the ids must be the first thing this hasher is fed (completionBlockHashes).
   */
  tokenIds(ids: readonly number[]): void {
    const idsPerBlock = this.blockUnits / UNITS_PER_TOKEN;
    let { a, b } = this;
    let inBlock = 0;
    for (let t = 0; t < ids.length && this.hashes.length < this.blocks; t++) {
      const id = ids[t];
      const high = 2 * ((id / PAIRS) | 0);
      const low = 2 * (id % PAIRS);
      a = Math.imul(a ^ PAIR_CODES[high], 0x01000193);
      b = Math.imul(b ^ PAIR_CODES[high], 0x5bd1e995);
      a = Math.imul(a ^ PAIR_CODES[high + 1], 0x01000193);
      b = Math.imul(b ^ PAIR_CODES[high + 1], 0x5bd1e995);
      a = Math.imul(a ^ PAIR_CODES[low], 0x01000193);
      b = Math.imul(b ^ PAIR_CODES[low], 0x5bd1e995);
      a = Math.imul(a ^ PAIR_CODES[low + 1], 0x01000193);
      b = Math.imul(b ^ PAIR_CODES[low + 1], 0x5bd1e995);
      if (++inBlock === idsPerBlock) {
        this.hashes.push(hex64(a, b));
        inBlock = 0;
      }
    }
    this.a = a;
    this.b = b;
    this.filled = inBlock * UNITS_PER_TOKEN;
  }
}

/** The values two base-36 digits hold. */
const PAIRS = TOKEN_ID_RADIX ** 2;
/** Each pair's two digits as character codes, high digit first: '00', '01', … 'zz'. */
const PAIR_CODES = Uint8Array.from({ length: 2 * PAIRS }, (_, k) => {
  const digit = k % 2 === 0 ? (k / 2 / TOKEN_ID_RADIX) | 0 : (k >> 1) % TOKEN_ID_RADIX;
  return digit < 10 ? 48 + digit : 87 + digit; // '0'…'9', 'a'…'z'
});

/** '0'…'9', 'a'…'f' as character codes. */
const HEX = Array.from('0123456789abcdef', (d) => d.charCodeAt(0));
/** hex64's digits, reused. */
const digits = new Array<number>(16).fill(0);

/**
 * Both lanes as 16 lowercase hex digits, in one flat string: a prefix index looks each up in a
 * map, and a string built by concatenation is copied flat again at its first lookup.
 */
function hex64(a: number, b: number): string {
  for (let k = 0; k < 8; k++) {
    const shift = 28 - 4 * k;
    digits[k] = HEX[(a >>> shift) & 15];
    digits[k + 8] = HEX[(b >>> shift) & 15];
  }
  return String.fromCharCode(...digits);
}
