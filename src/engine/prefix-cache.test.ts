import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KvBlockPool } from './kv-block-pool.ts';
import { type PrefixEntry, PrefixCache } from './prefix-cache.ts';

function setup(total = 10) {
  const pool = new KvBlockPool(total);
  return { pool, cache: new PrefixCache(pool) };
}

/** Computes `hashes` as one sequence would: private blocks, then cached once computed. */
function compute(pool: KvBlockPool, cache: PrefixCache, hashes: string[]): PrefixEntry[] {
  pool.allocate(hashes.length);
  return hashes.map((h) => cache.insert(h, 1)).filter((e): e is PrefixEntry => e !== null);
}

test('match counts leading hits only, up to a cap, and reports idle blocks', () => {
  const { pool, cache } = setup();
  const held = compute(pool, cache, ['a', 'b', 'c']);
  assert.equal(cache.match(['a', 'b', 'x', 'c'], 1, 4), 2);
  assert.equal(cache.matchedIdleBlocks, 0);
  for (const e of held.reverse()) cache.release(e);
  assert.equal(cache.match(['a', 'b', 'c'], 1, 2), 2);
  assert.equal(cache.matchedIdleBlocks, 2);
  // Stride 2: entry j is named by hashes[2j + 1].
  assert.equal(cache.match(['-', 'a', '-', 'b', '-', 'zz'], 2, 3), 2);
});

test('references move entries between used and reclaimable; release order sets eviction order', () => {
  const { pool, cache } = setup(4);
  const held = compute(pool, cache, ['a', 'b', 'c']);
  assert.equal(pool.usedBlocks, 3);
  // Released deepest first, as a finishing sequence does: c is evicted before b before a.
  for (const e of [...held].reverse()) cache.release(e);
  assert.deepEqual([pool.usedBlocks, pool.cachedBlocks], [0, 3]);
  cache.match(['a'], 1, 1);
  const out: PrefixEntry[] = [];
  cache.acquireMatched(out);
  assert.equal(out[0].refs, 1);
  assert.deepEqual([pool.usedBlocks, pool.cachedBlocks], [1, 2]);
  pool.allocate(2); // 1 unallocated + 1 reclaimed: c goes
  assert.deepEqual(
    ['a', 'b', 'c'].map((h) => cache.has(h)),
    [true, true, false],
  );
  pool.allocate(1);
  assert.deepEqual(
    ['a', 'b', 'c'].map((h) => cache.has(h)),
    [true, false, false],
  );
  assert.equal(cache.stats.evictedBlocks, 2);
  assert.throws(() => pool.allocate(1), { name: 'EngineInvariantError' });
});

test('inserting a hash already cached leaves the caller a private copy', () => {
  const { pool, cache } = setup();
  compute(pool, cache, ['a']);
  assert.equal(cache.insert('a', 1), null);
  assert.equal(cache.size, 1);
});

test('query statistics accumulate', () => {
  const { cache } = setup();
  cache.recordQuery(100, 64);
  cache.recordQuery(50, 0);
  assert.deepEqual(cache.stats, {
    queries: 2,
    queriedTokens: 150,
    hitTokens: 64,
    evictedBlocks: 0,
  });
});
