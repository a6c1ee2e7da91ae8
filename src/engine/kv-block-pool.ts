/**
 * The replica's fixed pool of GPU KV blocks, kept as counts: the engine never needs block
 * identities, only how many are held. A block is in one of three states — referenced by at
 * least one sequence (`used`), cached but unreferenced (`cached`: a prefix block kept for
 * reuse, reclaimable at any time), or unallocated. The main rule: `used + cached ≤ total`,
 * and nothing is ever allocated past it; a caller that tries has a bug and gets an error.
 */
import { EngineInvariantError } from './invariant.ts';

/** Gives cached blocks back to the pool when it runs short (the prefix cache, evicting LRU). */
export interface BlockReclaimer {
  /** Drop cached blocks (through `KvBlockPool.drop`) until at least `blocks` are unallocated. */
  reclaim(blocks: number): void;
}

export class KvBlockPool {
  readonly totalBlocks: number;
  private used = 0;
  private cached = 0;
  private reclaimer: BlockReclaimer | null = null;

  constructor(totalBlocks: number) {
    if (!Number.isInteger(totalBlocks) || totalBlocks < 1) {
      throw new EngineInvariantError(
        `kv pool: totalBlocks must be a positive integer, got ${totalBlocks}`,
      );
    }
    this.totalBlocks = totalBlocks;
  }

  setReclaimer(reclaimer: BlockReclaimer): void {
    this.reclaimer = reclaimer;
  }

  /** Blocks referenced by running (or in-flight) sequences. */
  get usedBlocks(): number {
    return this.used;
  }

  /** Unreferenced prefix blocks still cached: reclaimable. */
  get cachedBlocks(): number {
    return this.cached;
  }

  /** Blocks a new allocation may take, reclaimable cached ones included (vLLM's "free" view). */
  get freeBlocks(): number {
    return this.totalBlocks - this.used;
  }

  get unallocatedBlocks(): number {
    return this.totalBlocks - this.used - this.cached;
  }

  /** Takes `n` blocks for a sequence, reclaiming cached ones if it must. */
  allocate(n: number): void {
    if (n <= 0) return;
    if (n > this.totalBlocks - this.used) {
      throw new EngineInvariantError(`kv pool: allocate ${n} with only ${this.freeBlocks} free`);
    }
    const short = n - this.unallocatedBlocks;
    if (short > 0) {
      if (this.reclaimer === null)
        throw new EngineInvariantError('kv pool: cached blocks but no reclaimer');
      this.reclaimer.reclaim(short);
      if (n > this.unallocatedBlocks) {
        throw new EngineInvariantError(`kv pool: reclaim left ${this.unallocatedBlocks} < ${n}`);
      }
    }
    this.used += n;
  }

  /** Gives back `n` blocks a sequence held privately. */
  release(n: number): void {
    if (n <= 0) return;
    if (n > this.used) throw new EngineInvariantError(`kv pool: release ${n} of ${this.used} used`);
    this.used -= n;
  }

  /** A cached prefix block lost its last reference: it stays cached, now reclaimable. */
  park(n: number): void {
    if (n > this.used) throw new EngineInvariantError(`kv pool: park ${n} of ${this.used} used`);
    this.used -= n;
    this.cached += n;
  }

  /** A reclaimable cached block got a reference again (a prefix hit). */
  unpark(n: number): void {
    if (n > this.cached)
      throw new EngineInvariantError(`kv pool: unpark ${n} of ${this.cached} cached`);
    this.cached -= n;
    this.used += n;
  }

  /** A reclaimable cached block was evicted. */
  drop(n: number): void {
    if (n > this.cached)
      throw new EngineInvariantError(`kv pool: drop ${n} of ${this.cached} cached`);
    this.cached -= n;
  }
}
