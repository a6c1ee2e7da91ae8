// The prefix index: matching a prompt against every replica at once, approximate eviction, and a
// precise index fed by an engine's KV events holding exactly what the engine's cache holds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PrefixIndex } from './prefix-index.ts';
import { Recorder, auditKv, req, runLoop, testConfig } from '../../engine/engine-test-kit.ts';
import { ReplicaCore } from '../../engine/replica.ts';
import type { EngineRequest } from '../../engine/engine-types.ts';

const H = (family: string, n: number) => Array.from({ length: n }, (_, i) => `${family}${i}`);
const blocks = (family: string, n: number, blockTokens = 16) => ({
  blockTokens,
  hashes: H(family, n),
});

test('a replica matches a prompt up to the first block it lacks, never the whole prompt', () => {
  const index = new PrefixIndex('approximate', 3, Infinity);
  index.served(0, blocks('p', 4), 64);
  index.served(1, blocks('p', 2), 32);
  index.served(2, blocks('q', 4), 64);
  const hits = index.match(blocks('p', 6), 3, 95);
  assert.deepEqual([...hits.subarray(0, 3)], [64, 32, 0]);
  // Capped: at least one token is computed (a 64-token prompt may reuse 48 of them).
  assert.deepEqual([...index.match(blocks('p', 4), 3, 63).subarray(0, 3)], [48, 32, 0]);
  assert.deepEqual([...index.match(undefined, 3, 100).subarray(0, 3)], [0, 0, 0]);
});

test('past 32 replicas the bitsets widen, and every replica still matches', () => {
  const index = new PrefixIndex('approximate', 1, Infinity);
  for (const r of [0, 31, 32, 63, 64, 99]) index.served(r, blocks('p', 3), 48);
  const hits = index.match(blocks('p', 3), 100, 47);
  for (let r = 0; r < 100; r++) assert.equal(hits[r], [0, 31, 32, 63, 64, 99].includes(r) ? 32 : 0);
});

test('approximate: a replica holds its cache size in blocks, least recently used out first, a chain from its tail', () => {
  const index = new PrefixIndex('approximate', 1, 6 * 16);
  index.served(0, blocks('x', 4), 64);
  index.served(0, blocks('y', 4), 64);
  // 8 blocks into 6: x's two deepest go, its root stays (a chain is evicted from its tail).
  assert.equal(index.blocksOf(0), 6);
  assert.equal(index.match(blocks('x', 4), 1, 63)[0], 32);
  assert.equal(index.match(blocks('y', 4), 1, 63)[0], 48);
  // Serving x again makes it the most recent: y's tail goes next.
  index.served(0, blocks('x', 4), 64);
  assert.equal(index.match(blocks('x', 4), 1, 63)[0], 48);
  assert.equal(index.match(blocks('y', 4), 1, 63)[0], 32);
  index.cleared(0);
  assert.equal(index.size, 0);
});

test('the galloping match agrees with a block-by-block walk of every replica', () => {
  let seed = 9;
  const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const index = new PrefixIndex('approximate', 40, 40 * 16);
  // Prompts from a few families that share roots, served to random replicas with small caches.
  const prompt = () => {
    const family = Math.floor(rand() * 5);
    const shared = Math.floor(rand() * 30);
    const own = Math.floor(rand() * 20);
    const tag = Math.floor(rand() * 1e9);
    return [...H(`f${family}.`, shared), ...H(`u${tag}.`, own)];
  };
  for (let k = 0; k < 400; k++) {
    const hashes = prompt();
    index.served(Math.floor(rand() * 40), { blockTokens: 16, hashes }, hashes.length * 16);
  }
  for (let k = 0; k < 200; k++) {
    const hashes = prompt();
    const got = [...index.match({ blockTokens: 16, hashes }, 40, 1e9).subarray(0, 40)];
    const walk = Array.from({ length: 40 }, (_, r) => {
      let n = 0;
      while (
        n < hashes.length &&
        index.match({ blockTokens: 16, hashes: [hashes[n]] }, 40, 1e9)[r] > 0
      )
        n++;
      return n * 16;
    });
    assert.deepEqual(got, walk);
  }
});

test("precise: fed by an engine's KV events, the index holds exactly what the engine caches", () => {
  const index = new PrefixIndex('precise', 1, Infinity);
  const rec = new Recorder();
  const listener = Object.assign(rec, {
    onKvEvent: (kind: 'stored' | 'removed', hash: string) =>
      kind === 'stored' ? index.stored(0, hash) : index.removed(0, hash),
  });
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ enablePrefixCaching: true, maxBatchedTokens: 512, numGpuBlocks: 24 }),
    { name: 'flat', stepMs: () => 10 },
    listener,
  );
  // Sessions that grow, shared roots, and enough distinct prompts to force evictions.
  const arrivals = [];
  for (let k = 0; k < 60; k++) {
    const family = `f${k % 7}`;
    const n = 2 + (k % 5);
    arrivals.push({ atMs: k * 15, req: req(`r${k}`, n * 16 + 5, 3, H(family, n)) });
  }
  runLoop(core, arrivals, () => auditKv(core));
  const cache = core.kv.cache!;
  assert.ok(core.stats().prefixEvictedBlocks > 0, 'the scenario evicts');
  const engine = [...cache.entries()].map((e) => e.hash).sort();
  assert.ok(engine.length > 0);
  assert.equal(index.size, engine.length);
  assert.equal(index.blocksOf(0), engine.length);
  for (const hash of engine) {
    assert.equal(index.match({ blockTokens: 16, hashes: [hash] }, 1, 1_000)[0], 16, hash);
  }
});
