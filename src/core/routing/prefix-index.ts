/**
 * Which replica's prefix cache likely holds which prompt blocks: one table from a chained block
 * hash to the set of replicas holding it (a bitset), so matching a prompt against the whole
 * fleet costs one lookup per block of its prefix, not one per block per replica — it walks the
 * prompt's hashes until no replica holds the next one.
 *
 * Two ways to feed it, as llm-d's KV-cache indexer has them:
 * - **approximate** (`served`): the blocks of each prompt the router placed are assumed cached
 *   there; each replica keeps at most its KV capacity in blocks, least recently used evicted
 *   first. A prompt's blocks are touched deepest first, so its root is the most recent and the
 *   tail of a chain goes before its head, as the engine frees a sequence's blocks.
 * - **precise** (`stored` / `removed`): the engine's own KV events say what it cached and what
 *   it evicted (the simulator's engines report them).
 *
 * Main rule: a hash names its whole prefix (block j's hash covers blocks 0..j), so a replica
 * matches a prompt up to the first block it lacks.
 */
import type { PrefixBlocks } from '../request/request.ts';
import type { Tokens } from '../request/units.ts';

export type PrefixMode = 'approximate' | 'precise';

export class PrefixIndex {
  readonly mode: PrefixMode;
  /** Block hash → replicas holding it, 32 per word. */
  private readonly holders = new Map<string, Uint32Array>();
  /** Per replica, its blocks in least-recently-used order (approximate mode). */
  private readonly lru: Map<string, true>[] = [];
  private words: number;
  /** Blocks each replica may hold (approximate mode), in the index's block size. */
  private readonly capacityTokens: Tokens;
  /** Matched tokens per replica of the last `match`, and the replicas still matching: reused. */
  private matched = new Float64Array(0);
  private alive: Uint32Array;

  constructor(mode: PrefixMode, replicas: number, capacityTokens: Tokens) {
    this.mode = mode;
    this.words = Math.max(1, Math.ceil(replicas / 32));
    this.capacityTokens = capacityTokens;
    this.alive = new Uint32Array(this.words);
  }

  /** Distinct blocks indexed (all replicas). */
  get size(): number {
    return this.holders.size;
  }

  /** Blocks indexed for `replica`. */
  blocksOf(replica: number): number {
    return this.lru[replica]?.size ?? 0;
  }

  /**
   * Prompt tokens of `prefix` each replica holds, as a view indexed by replica (0 past the
   * last with a hit), valid until the next call; `limit` caps a match (a hit never covers the
   * whole prompt: at least one token is computed).
   */
  match(prefix: PrefixBlocks | undefined, replicas: number, limit: Tokens): Float64Array {
    if (this.matched.length < replicas) this.matched = new Float64Array(replicas);
    const out = this.matched;
    out.fill(0, 0, replicas);
    if (prefix === undefined) return out;
    const bt = prefix.blockTokens;
    const blocks = Math.min(prefix.hashes.length, Math.floor(limit / bt));
    // `alive`: replicas that hold every block so far; a replica leaves it at its first miss.
    const alive = this.alive;
    let depth = 0;
    for (; depth < blocks; depth++) {
      const h = this.holders.get(prefix.hashes[depth]);
      if (h === undefined) break;
      if (depth === 0) alive.set(h);
      else {
        let any = 0;
        for (let w = 0; w < this.words; w++) {
          const left = alive[w] & ~h[w];
          // Replicas dropping out here matched `depth` blocks.
          if (left !== 0) this.credit(left, w, depth * bt, out);
          any |= alive[w] &= h[w];
        }
        if (any === 0) return out;
      }
    }
    if (depth > 0) for (let w = 0; w < this.words; w++) this.credit(alive[w], w, depth * bt, out);
    return out;
  }

  /** Approximate mode: `replica` was sent a prompt of these blocks; they are now its most recent. */
  served(replica: number, prefix: PrefixBlocks | undefined, promptTokens: Tokens): void {
    if (prefix === undefined) return;
    const lru = (this.lru[replica] ??= new Map());
    const bt = prefix.blockTokens;
    const blocks = Math.min(prefix.hashes.length, Math.floor(promptTokens / bt));
    for (let j = blocks - 1; j >= 0; j--) {
      const hash = prefix.hashes[j];
      if (lru.delete(hash)) lru.set(hash, true);
      else this.stored(replica, hash);
    }
    const cap = Math.max(1, Math.floor(this.capacityTokens / bt));
    while (lru.size > cap) this.removed(replica, lru.keys().next().value as string);
  }

  /** `replica` cached the block `hash` (precise mode: an engine KV event). */
  stored(replica: number, hash: string): void {
    if (replica >= this.words * 32) this.widen(replica);
    let h = this.holders.get(hash);
    if (h === undefined) this.holders.set(hash, (h = new Uint32Array(this.words)));
    h[replica >>> 5] |= 1 << (replica & 31);
    (this.lru[replica] ??= new Map()).set(hash, true);
  }

  /** `replica` evicted the block `hash`. */
  removed(replica: number, hash: string): void {
    this.lru[replica]?.delete(hash);
    const h = this.holders.get(hash);
    if (h === undefined) return;
    h[replica >>> 5] &= ~(1 << (replica & 31));
    for (let w = 0; w < this.words; w++) if (h[w] !== 0) return;
    this.holders.delete(hash);
  }

  /** `replica` is gone (removed, or restarted with a cold cache): forget everything it held. */
  cleared(replica: number): void {
    const lru = this.lru[replica];
    if (lru === undefined) return;
    for (const hash of [...lru.keys()]) this.removed(replica, hash);
  }

  /** Room for `replica` in every bitset: a fleet grew past the words it had. */
  private widen(replica: number): void {
    const words = Math.ceil((replica + 1) / 32);
    for (const [hash, h] of this.holders) {
      const wider = new Uint32Array(words);
      wider.set(h);
      this.holders.set(hash, wider);
    }
    this.words = words;
    this.alive = new Uint32Array(words);
  }

  private credit(bits: number, word: number, tokens: Tokens, out: Float64Array): void {
    let b = bits >>> 0;
    while (b !== 0) {
      const low = b & -b;
      const i = word * 32 + (31 - Math.clz32(low));
      if (i < out.length) out[i] = tokens;
      b = (b ^ low) >>> 0;
    }
  }
}
