/**
 * Automatic prefix caching over the block pool, as vLLM does it: a computed, full prompt block
 * is kept under its chained hash, shared by every later sequence whose prompt starts the same
 * way. An entry is referenced by the sequences using it; with no reference it stays cached but
 * joins an LRU list and is evicted, least recently released first, when the pool runs short.
 * Main rule: only whole entries are shared, and a hit never covers a sequence's whole prompt
 * (the caller caps the match so at least one token is computed).
 */
import type { BlockReclaimer, KvBlockPool } from './kv-block-pool.ts';

export class PrefixEntry {
  readonly hash: string;
  /** KV blocks this entry spans (its tokens / the pool's block size). */
  readonly blocks: number;
  refs = 1;
  // Links of the LRU list of unreferenced entries; null while referenced.
  prev: PrefixEntry | null = null;
  next: PrefixEntry | null = null;

  constructor(hash: string, blocks: number) {
    this.hash = hash;
    this.blocks = blocks;
  }
}

export interface PrefixCacheStats {
  /** Admissions that queried the cache. */
  queries: number;
  /** Prompt tokens of those admissions. */
  queriedTokens: number;
  /** Of those, tokens served from the cache. */
  hitTokens: number;
  evictedBlocks: number;
}

/** vLLM's KV cache events (BlockStored, BlockRemoved), one per cached prefix entry. */
export type KvEventSink = (kind: 'stored' | 'removed', hash: string) => void;

export class PrefixCache implements BlockReclaimer {
  private readonly pool: KvBlockPool;
  /** Told of every entry cached and evicted (a prefix-aware router's precise index). */
  events: KvEventSink | null = null;
  private readonly byHash = new Map<string, PrefixEntry>();
  // Sentinel of the circular LRU list: sentinel.next is the next to evict.
  private readonly lru = new PrefixEntry('', 0);
  /** Entries of the last `match`, in prompt order; reused to avoid an allocation per admission. */
  private readonly matched: PrefixEntry[] = [];
  /** Blocks among the last match that are unreferenced (a hit on them takes free blocks). */
  matchedIdleBlocks = 0;
  readonly stats: PrefixCacheStats = {
    queries: 0,
    queriedTokens: 0,
    hitTokens: 0,
    evictedBlocks: 0,
  };

  constructor(pool: KvBlockPool) {
    this.pool = pool;
    this.lru.prev = this.lru;
    this.lru.next = this.lru;
    pool.setReclaimer(this);
  }

  get size(): number {
    return this.byHash.size;
  }

  has(hash: string): boolean {
    return this.byHash.has(hash);
  }

  /**
   * Counts leading cached entries of a prompt, at most `maxEntries`. Entry j's hash is
   * `hashes[(j + 1) · stride − 1]`: chained hashes make the last one of an entry name it all.
   */
  match(hashes: readonly string[], stride: number, maxEntries: number): number {
    const matched = this.matched;
    matched.length = 0;
    let idle = 0;
    for (let j = 0; j < maxEntries; j++) {
      const e = this.byHash.get(hashes[(j + 1) * stride - 1]);
      if (e === undefined) break;
      matched.push(e);
      if (e.refs === 0) idle += e.blocks;
    }
    this.matchedIdleBlocks = idle;
    return matched.length;
  }

  /** How many leading entries of a prompt are cached, as `match` counts them, keeping nothing. */
  peek(hashes: readonly string[], stride: number, maxEntries: number): number {
    let j = 0;
    while (j < maxEntries && this.byHash.has(hashes[(j + 1) * stride - 1])) j++;
    return j;
  }

  /** References every entry of the last match (taking them off the LRU list) and appends them to `out`. */
  acquireMatched(out: PrefixEntry[]): void {
    const matched = this.matched;
    for (let i = 0; i < matched.length; i++) {
      const e = matched[i];
      if (e.refs === 0) {
        this.unlink(e);
        this.pool.unpark(e.blocks);
      }
      e.refs++;
      out.push(e);
    }
    matched.length = 0;
  }

  recordQuery(promptTokens: number, hitTokens: number): void {
    this.stats.queries++;
    this.stats.queriedTokens += promptTokens;
    this.stats.hitTokens += hitTokens;
  }

  /**
   * Caches a block the caller has just computed and holds privately: it becomes shared with one
   * reference (the caller's), with no change to the pool. Returns null if the hash is cached
   * already (another sequence computed the same prefix concurrently); the caller keeps its copy
   * private, as vLLM does.
   */
  insert(hash: string, blocks: number): PrefixEntry | null {
    if (this.byHash.has(hash)) return null;
    const e = new PrefixEntry(hash, blocks);
    this.byHash.set(hash, e);
    this.events?.('stored', hash);
    return e;
  }

  /** Drops one reference; at zero the entry becomes the most recently used reclaimable one. */
  release(e: PrefixEntry): void {
    if (--e.refs > 0) return;
    const tail = this.lru.prev as PrefixEntry;
    e.prev = tail;
    e.next = this.lru;
    tail.next = e;
    this.lru.prev = e;
    this.pool.park(e.blocks);
  }

  reclaim(blocks: number): void {
    let freed = 0;
    while (freed < blocks) {
      const e = this.lru.next as PrefixEntry;
      if (e === this.lru) return;
      this.unlink(e);
      this.byHash.delete(e.hash);
      this.events?.('removed', e.hash);
      this.pool.drop(e.blocks);
      this.stats.evictedBlocks += e.blocks;
      freed += e.blocks;
    }
  }

  /** Every cached entry, referenced or not (audits and tests). */
  *entries(): IterableIterator<PrefixEntry> {
    yield* this.byHash.values();
  }

  private unlink(e: PrefixEntry): void {
    (e.prev as PrefixEntry).next = e.next;
    (e.next as PrefixEntry).prev = e.prev;
    e.prev = null;
    e.next = null;
  }
}
