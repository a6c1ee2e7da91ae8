import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KvBlockPool } from './kv-block-pool.ts';

test('allocate and release by count; never past capacity', () => {
  const pool = new KvBlockPool(10);
  pool.allocate(7);
  assert.deepEqual([pool.usedBlocks, pool.freeBlocks, pool.unallocatedBlocks], [7, 3, 3]);
  assert.throws(() => pool.allocate(4), { name: 'EngineInvariantError' });
  assert.equal(pool.usedBlocks, 7);
  pool.release(7);
  assert.equal(pool.freeBlocks, 10);
  assert.throws(() => pool.release(1), { name: 'EngineInvariantError' });
  assert.throws(() => new KvBlockPool(0), { name: 'EngineInvariantError' });
});

test('parked (cached, unreferenced) blocks count as free and are reclaimed on demand', () => {
  const pool = new KvBlockPool(10);
  const asked: number[] = [];
  pool.setReclaimer({
    reclaim(n) {
      asked.push(n);
      pool.drop(n);
    },
  });
  pool.allocate(6);
  pool.park(4);
  assert.deepEqual(
    [pool.usedBlocks, pool.cachedBlocks, pool.freeBlocks, pool.unallocatedBlocks],
    [2, 4, 8, 4],
  );
  pool.unpark(1);
  assert.deepEqual([pool.usedBlocks, pool.cachedBlocks], [3, 3]);
  pool.allocate(5); // 4 unallocated + 1 reclaimed
  assert.deepEqual(asked, [1]);
  assert.deepEqual([pool.usedBlocks, pool.cachedBlocks, pool.unallocatedBlocks], [8, 2, 0]);
  assert.throws(() => pool.unpark(3), { name: 'EngineInvariantError' });
});

test('a reclaimer that frees too little is caught', () => {
  const pool = new KvBlockPool(4);
  pool.setReclaimer({ reclaim() {} });
  pool.allocate(4);
  pool.park(4);
  assert.throws(() => pool.allocate(1), { name: 'EngineInvariantError' });
});
