/**
 * Which replica's prefix cache likely holds which prompt blocks: one table from a chained block
 * hash to the set of replicas holding it (a bitset), so a prompt is matched against the whole
 * fleet at once, not replica by replica. A replica's holdings are prefix-closed — a block is
 * touched after, and so evicted before, its parent — so the set of replicas matching a prompt
 * only shrinks along it, and the match gallops: O(log blocks) lookups each time the set
 * changes, not one per block.
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
  /** Block hash → replicas holding it, 32 per word (plain arrays: lighter than typed ones). */
  private readonly holders = new Map<string, number[]>();
  /** Per replica, its blocks in least-recently-used order (approximate mode). */
  private readonly lru: Map<string, true>[] = [];
  private words: number;
  /** Blocks each replica may hold (approximate mode), in the index's block size. */
  private readonly capacityTokens: Tokens;
  /** Matched tokens per replica of the last `match`, and the replicas still matching: reused. */
  private matched = new Float64Array(0);
  private alive: number[];

  constructor(mode: PrefixMode, replicas: number, capacityTokens: Tokens) {
    this.mode = mode;
    this.words = Math.max(1, Math.ceil(replicas / 32));
    this.capacityTokens = capacityTokens;
    this.alive = new Array<number>(this.words).fill(0);
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
    const hashes = prefix.hashes;
    const blocks = Math.min(hashes.length, Math.floor(limit / bt));
    const first = blocks > 0 ? this.holders.get(hashes[0]) : undefined;
    if (first === undefined) return out;
    // `alive`: the replicas holding every block before `lo`. Holdings are prefix-closed (a
    // block is touched, and evicted, after its parent), so the alive set can only shrink along
    // the prompt: gallop ahead while every alive replica holds the probed block, then search
    // back for the first block some lack — O(log blocks) lookups per change of the set.
    const alive = this.alive;
    for (let w = 0; w < this.words; w++) alive[w] = first[w];
    let lo = 1;
    while (lo < blocks) {
      let step = 1;
      let hi = -1;
      while (lo < blocks) {
        const p = Math.min(blocks - 1, lo + step - 1);
        if (!this.allHold(hashes[p])) {
          hi = p;
          break;
        }
        lo = p + 1;
        step *= 2;
      }
      if (hi < 0) break;
      // The first block in [lo, hi] some alive replica lacks.
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (this.allHold(hashes[mid])) lo = mid + 1;
        else hi = mid;
      }
      // Replicas lacking block `lo` matched `lo` blocks; the rest hold it and go on.
      const h = this.holders.get(hashes[lo]);
      let any = 0;
      for (let w = 0; w < this.words; w++) {
        const held = h === undefined ? 0 : h[w];
        const left = alive[w] & ~held;
        if (left !== 0) this.credit(left, w, lo * bt, out);
        any |= alive[w] &= held;
      }
      if (any === 0) return out;
      lo++;
    }
    for (let w = 0; w < this.words; w++) this.credit(alive[w], w, blocks * bt, out);
    return out;
  }

  /** Whether every replica still alive in the current match holds `hash`. */
  private allHold(hash: string): boolean {
    const h = this.holders.get(hash);
    if (h === undefined) return false;
    const alive = this.alive;
    for (let w = 0; w < this.words; w++) if ((alive[w] & ~h[w]) !== 0) return false;
    return true;
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
    if (h === undefined) this.holders.set(hash, (h = new Array<number>(this.words).fill(0)));
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
    for (const h of this.holders.values()) while (h.length < words) h.push(0);
    this.words = words;
    this.alive = new Array<number>(words).fill(0);
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
