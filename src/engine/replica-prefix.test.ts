import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineConfig, EngineRequest } from './engine-types.ts';
import { Recorder, auditKv, req, runLoop, testConfig } from './engine-test-kit.ts';
import { ReplicaCore } from './replica.ts';
import type { StepShape } from './timing/profile.ts';

const H = (family: string, n: number) => Array.from({ length: n }, (_, i) => `${family}${i}`);

function replica(over: Partial<EngineConfig> = {}) {
  const rec = new Recorder();
  const shapes: StepShape[] = [];
  const profile = { name: 'rec', stepMs: (s: StepShape) => (shapes.push({ ...s }), 10) };
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ enablePrefixCaching: true, maxBatchedTokens: 512, ...over }),
    profile,
    rec,
  );
  const run = (r: EngineRequest) => {
    shapes.length = 0;
    core.add(r, 0);
    runLoop(core, [], () => auditKv(core));
    return shapes.reduce((sum, sh) => sum + sh.prefillTokens, 0);
  };
  return { rec, core, run, shapes };
}

test('a repeated prefix is served from the cache and cuts prefill, never to zero tokens', () => {
  const cases = [
    // [input, hashes, blockTokens, computed on the second pass, cached]
    { input: 64, n: 4, bt: 16, computed: 16, cached: 48 }, // full hit: the last block is recomputed
    { input: 70, n: 5, bt: 16, computed: 6, cached: 64 }, // trailing partial block never cached
    { input: 1100, n: 3, bt: 512, computed: 76, cached: 1024 }, // Mooncake-style 512-token blocks
    { input: 40, n: 5, bt: 8, computed: 8, cached: 32 }, // hash blocks smaller than KV blocks: stride 2
  ];
  for (const c of cases) {
    const { rec, core, run } = replica({ numGpuBlocks: 200 });
    assert.equal(run(req('a', c.input, 2, H('p', c.n), c.bt)), c.input);
    assert.equal(run(req('b', c.input, 2, H('p', c.n), c.bt)), c.computed, JSON.stringify(c));
    assert.ok(rec.of('b')[1].endsWith(`cached=${c.cached}`), rec.of('b')[1]);
    assert.equal(core.load().kvUsedBlocks, 0);
    assert.equal(core.stats().prefixHitTokens, c.cached);
  }
});

test('cachedPromptTokens: what admission would then take from the cache, the cache untouched', () => {
  const cases = [
    { input: 64, n: 4, bt: 16, cached: 48 },
    { input: 70, n: 5, bt: 16, cached: 64 },
    { input: 1100, n: 3, bt: 512, cached: 1024 },
    { input: 40, n: 5, bt: 8, cached: 32 },
  ];
  for (const c of cases) {
    const { core, run } = replica({ numGpuBlocks: 200 });
    const next = req('b', c.input, 2, H('p', c.n), c.bt);
    assert.equal(core.cachedPromptTokens(next), 0, 'nothing cached yet');
    run(req('a', c.input, 2, H('p', c.n), c.bt));
    const cache = core.kv.cache!;
    const before = { size: cache.size, ...cache.stats, free: core.kv.pool.freeBlocks };
    assert.equal(core.cachedPromptTokens(next), c.cached, JSON.stringify(c));
    assert.equal(
      core.cachedPromptTokens(req('c', c.input, 2, H('q', c.n), c.bt)),
      0,
      'another prefix',
    );
    assert.deepEqual({ size: cache.size, ...cache.stats, free: core.kv.pool.freeBlocks }, before);
    run(next);
    assert.equal(core.stats().prefixHitTokens, c.cached);
  }
  const off = replica({ enablePrefixCaching: false });
  off.run(req('a', 64, 2, H('p', 4)));
  assert.equal(off.core.cachedPromptTokens(req('b', 64, 2, H('p', 4))), 0);
});

test('with caching off, or without hashes, nothing is reused', () => {
  const off = replica({ enablePrefixCaching: false });
  off.run(req('a', 64, 2, H('p', 4)));
  assert.equal(off.run(req('b', 64, 2, H('p', 4))), 64);
  const bare = replica();
  bare.run(req('a', 64, 2));
  assert.equal(bare.run(req('b', 64, 2)), 64);
  assert.equal(bare.core.kv.pool.cachedBlocks, 0);
});

test('cached blocks stay after their sequences end and are evicted LRU, deepest block first', () => {
  const { core, run } = replica({ numGpuBlocks: 12 });
  run(req('x', 64, 1, H('x', 4)));
  run(req('y', 64, 1, H('y', 4)));
  const cache = core.kv.cache!;
  assert.equal(core.kv.pool.usedBlocks, 0);
  assert.equal(core.kv.pool.cachedBlocks, 8);
  // 6 blocks: 4 unallocated, then 2 evicted — x's deepest two, x having been released first.
  run(req('z', 96, 1));
  assert.deepEqual(
    [0, 1, 2, 3].map((i) => cache.has(`x${i}`)),
    [true, true, false, false],
  );
  assert.deepEqual(
    [0, 1, 2, 3].map((i) => cache.has(`y${i}`)),
    [true, true, true, true],
  );
  assert.equal(core.stats().prefixEvictedBlocks, 2);
  // x's surviving prefix is still a hit.
  assert.equal(run(req('x2', 64, 1, H('x', 4))), 32);
});

test('a hit on unreferenced cached blocks is admitted only if they and the rest fit', () => {
  const { core, run } = replica({ numGpuBlocks: 6, maxBatchedTokens: 512 });
  run(req('a', 64, 1, H('p', 4)));
  assert.equal(core.kv.pool.cachedBlocks, 4);
  // Needs all 6 blocks: the 4 cached ones revived, plus 2 fresh.
  assert.equal(run(req('b', 96, 1, H('p', 6))), 32);
  // Now p0..p3 are cached again but 7 blocks cannot fit in 6: it fails at add, evicting nothing.
  assert.equal(core.add(req('c', 97, 1, H('p', 7)), 0), false);
  assert.equal(core.kv.pool.cachedBlocks, 6);
  assert.equal(core.kv.pool.usedBlocks, 0);
});

test('two sequences computing the same prefix at once keep consistent counts', () => {
  const { rec, core } = replica({ numGpuBlocks: 40 });
  core.add(req('a', 64, 3, H('p', 4)), 0);
  core.add(req('b', 64, 3, H('p', 4)), 0);
  runLoop(core, [], () => auditKv(core));
  assert.ok(rec.of('b')[1].endsWith('cached=0'));
  assert.equal(core.kv.pool.cachedBlocks, 4);
  assert.equal(core.kv.pool.usedBlocks, 0);
});

test('caching on allocation (vLLM V1): a prompt arriving twice at once is computed once', () => {
  const { rec, core, shapes } = replica({ numGpuBlocks: 40, prefixCachedOnAllocation: true });
  core.add(req('a', 64, 3, H('p', 4)), 0);
  core.add(req('b', 64, 3, H('p', 4)), 0);
  core.add(req('c', 70, 3, [...H('p', 4), 'q']), 0);
  runLoop(core, [], () => auditKv(core));
  // b and c find the blocks a allocated in the same step; each computes only its own tail.
  assert.ok(rec.of('b')[1].endsWith('cached=48'), rec.of('b')[1]);
  assert.ok(rec.of('c')[1].endsWith('cached=64'), rec.of('c')[1]);
  assert.equal(shapes[0].prefillTokens, 64 + 16 + 6);
  assert.equal(core.kv.pool.usedBlocks, 0);
  assert.equal(core.kv.pool.cachedBlocks, 4);
});

test('caching on allocation: a prompt chunked over steps is found chunk by chunk', () => {
  const { rec, core } = replica({
    numGpuBlocks: 80,
    maxBatchedTokens: 48,
    prefixCachedOnAllocation: true,
  });
  core.add(req('a', 128, 2, H('p', 8)), 0);
  core.startStep(0);
  core.finishStep(10);
  // b arrives after a's first chunk (48 tokens). a's second chunk fills the next step's budget;
  // in the one after, b is admitted behind a's last chunk of 32 and finds it: all but the
  // prompt's last block (96 computed, plus 16 allocated; the last token is always computed).
  core.add(req('b', 128, 2, H('p', 8)), 10);
  runLoop(core, [], () => auditKv(core));
  assert.ok(rec.of('b')[1].endsWith('cached=112'), rec.of('b')[1]);
  assert.equal(core.kv.pool.usedBlocks, 0);
});

test('a running sequence shares cached blocks with a newcomer (reference counts)', () => {
  const { rec, core } = replica({ numGpuBlocks: 40 });
  core.add(req('a', 64, 20, H('p', 4)), 0);
  for (let now = 0; now < 30; now += 10) {
    core.startStep(now);
    core.finishStep(now + 10);
  }
  // a has computed its prompt and is decoding; b arrives and reuses a's blocks while a runs.
  core.add(req('b', 64, 2, H('p', 4)), 30);
  const shared = [...core.kv.cache!.entries()].filter((e) => e.refs > 0).length;
  assert.equal(shared, 4);
  runLoop(core, [], () => auditKv(core));
  assert.ok(rec.of('b')[1].endsWith('cached=48'));
  assert.equal(core.kv.pool.usedBlocks, 0);
  assert.equal(core.kv.pool.cachedBlocks, 4);
});
