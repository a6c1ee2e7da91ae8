/**
 * KV memory as sequences see it (vLLM's KVCacheManager): the GPU block pool, the prefix cache
 * on top of it, and the host pool used by swap preemption. Every operation is per sequence
 * and O(its blocks' entries), never per token. Main rule: a sequence holds exactly
 * ceil(tokens in KV / block size) GPU blocks or more, and its blocks are freed in one place.
 */
import type { EngineRequest } from './engine-types.ts';
import { KvBlockPool } from './kv-block-pool.ts';
import { PrefixCache } from './prefix-cache.ts';
import type { Seq } from './sequence.ts';

type AnySeq = Seq<EngineRequest>;

export class KvCacheManager {
  readonly blockSize: number;
  readonly pool: KvBlockPool;
  /** null when prefix caching is off. */
  readonly cache: PrefixCache | null;
  readonly hostTotalBlocks: number;
  hostUsedBlocks = 0;

  constructor(gpuBlocks: number, hostBlocks: number, blockSize: number, prefixCaching: boolean) {
    this.blockSize = blockSize;
    this.pool = new KvBlockPool(gpuBlocks);
    this.cache = prefixCaching ? new PrefixCache(this.pool) : null;
    this.hostTotalBlocks = hostBlocks;
  }

  blocksFor(tokens: number): number {
    return Math.ceil(tokens / this.blockSize);
  }

  /** Makes room for `tokens` tokens of `s` in KV; false (and nothing taken) if the pool is short. */
  grow(s: AnySeq, tokens: number): boolean {
    if (tokens <= s.blocks * this.blockSize) return true;
    const need = this.blocksFor(tokens) - s.blocks;
    if (need > this.pool.freeBlocks) return false;
    this.pool.allocate(need);
    s.blocks += need;
    return true;
  }

  /**
   * Admits a waiting sequence: reuses its cached prefix, takes the prompt KV a prefill instance
   * sent (its blocks fresh), and takes blocks for its first chunk (at most `budget` tokens).
   * Returns the chunk's tokens, or 0 if its blocks do not fit now.
   */
  admit(s: AnySeq, budget: number): number {
    const cache = this.cache;
    let hit = 0;
    let idle = 0;
    if (cache !== null && s.cacheLimit > 0) {
      // At least one prompt token is always computed: the step needs it to sample from.
      const maxHit = Math.min(s.cacheLimit, Math.floor((s.target - 1) / s.entryTokens));
      hit = cache.match(s.hashes, s.stride, maxHit);
      idle = cache.matchedIdleBlocks;
    }
    const hitTokens = hit * s.entryTokens;
    const hitBlocks = hit * s.entryBlocks;
    // KV sent by a prefill instance, beyond what the cache holds; the last prompt token is
    // computed here, to sample from.
    const loaded = Math.max(0, Math.min(s.transferred, s.target - 1) - hitTokens);
    const computed = hitTokens + loaded;
    const tokens = Math.min(s.target - computed, budget);
    const fresh = this.blocksFor(computed + tokens) - hitBlocks;
    if (fresh + idle > this.pool.freeBlocks) return 0;
    if (cache !== null) {
      // Reference the hit first, so the allocation below cannot evict it.
      if (hit > 0) cache.acquireMatched((s.shared ??= []));
      cache.recordQuery(s.target, hitTokens);
    }
    this.pool.allocate(fresh);
    s.blocks = hitBlocks + fresh;
    s.sharedBlocks = hitBlocks;
    s.computed = computed;
    s.cachedTokens = hitTokens;
    s.loadedTokens = s.transferred > 0 ? computed : 0;
    s.transferred = 0;
    s.cacheNext = hit;
    return tokens;
  }

  /**
   * Caches the prompt entries `s` has filled since the last call: those its first `tokens` KV
   * tokens cover — the tokens computed, or (caching on allocation) those the step being planned
   * will have computed.
   */
  commit(s: AnySeq, tokens: number = s.computed): void {
    const cache = this.cache;
    if (cache === null) return;
    const full = Math.min(Math.floor(tokens / s.entryTokens), s.cacheLimit);
    while (s.cacheNext < full) {
      const j = s.cacheNext++;
      const e = cache.insert(s.hashes[(j + 1) * s.stride - 1], s.entryBlocks);
      if (e === null) continue;
      (s.shared ??= []).push(e);
      s.sharedBlocks += s.entryBlocks;
    }
  }

  /** Frees every GPU block of `s`; its cached prefix entries stay cached, deepest first to evict. */
  freeSeq(s: AnySeq): void {
    const shared = s.shared;
    if (shared !== null && shared.length > 0) {
      const cache = this.cache as PrefixCache;
      for (let i = shared.length - 1; i >= 0; i--) cache.release(shared[i]);
      shared.length = 0;
    }
    this.pool.release(s.blocks - s.sharedBlocks);
    s.blocks = 0;
    s.sharedBlocks = 0;
  }

  /** Moves all of `s`'s KV to the host pool; false if it has no room (the caller recomputes). */
  swapOut(s: AnySeq): boolean {
    const n = s.blocks;
    if (this.hostUsedBlocks + n > this.hostTotalBlocks) return false;
    this.freeSeq(s);
    this.hostUsedBlocks += n;
    s.hostBlocks = n;
    return true;
  }

  /** Brings `s` back with room for `tokens` tokens; false if the GPU pool is short. */
  swapIn(s: AnySeq, tokens: number): boolean {
    const need = Math.max(this.blocksFor(tokens), s.hostBlocks);
    if (need > this.pool.freeBlocks) return false;
    this.pool.allocate(need);
    s.blocks = need;
    this.releaseHost(s);
    return true;
  }

  releaseHost(s: AnySeq): void {
    this.hostUsedBlocks -= s.hostBlocks;
    s.hostBlocks = 0;
  }
}
