import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineConfig, EngineRequest } from './engine-types.ts';
import {
  type Arrival,
  Recorder,
  assertTokensInOrder,
  auditKv,
  constProfile,
  req,
  runLoop,
  testConfig,
} from './engine-test-kit.ts';
import { ReplicaCore } from './replica.ts';

function replica(over: Partial<EngineConfig> = {}, rec = new Recorder()) {
  return { rec, core: new ReplicaCore<EngineRequest>(testConfig(over), constProfile(10), rec) };
}

function step(core: ReplicaCore<EngineRequest>, now: number): number {
  const d = core.startStep(now);
  assert.notEqual(d, null);
  core.finishStep(now + (d as number));
  return now + (d as number);
}

test('cancelling a waiting request removes it at once', () => {
  const { rec, core } = replica({ maxNumSeqs: 1 });
  core.add(req('a', 10, 3), 0);
  core.add(req('b', 10, 3), 0);
  step(core, 0);
  assert.equal(core.load().waiting, 1);
  assert.equal(core.cancel('b', 10), true);
  assert.equal(core.load().waiting, 0);
  assert.equal(core.load().pendingPrefillTokens, 0);
  runLoop(core);
  assert.deepEqual(rec.of('b'), []);
  assert.equal(core.cancel('b', 50), false);
  assert.equal(core.stats().cancelled, 1);
});

test('cancelling a running request between steps frees its blocks; it emits nothing more', () => {
  const { rec, core } = replica({ enablePrefixCaching: true });
  core.add(req('a', 40, 10, ['h0', 'h1']), 0);
  let now = step(core, 0);
  now = step(core, now);
  const before = rec.lines.length;
  assert.ok(core.load().kvUsedBlocks > 0);
  core.cancel('a', now);
  auditKv(core);
  assert.equal(core.load().kvUsedBlocks, 0);
  assert.equal(core.load().running, 0);
  assert.ok(core.idle);
  assert.equal(core.startStep(now), null);
  assert.equal(rec.lines.length, before);
  // Its computed prefix blocks stay cached and reclaimable.
  assert.equal(core.kv.pool.cachedBlocks, 2);
});

test('cancelling a running request while its step is in flight: nothing emitted, all freed by the end', () => {
  const { rec, core } = replica({ maxBatchedTokens: 256 });
  core.add(req('a', 100, 5), 0);
  core.add(req('b', 10, 5), 0);
  const d = core.startStep(0) as number;
  core.cancel('a', 3);
  assert.equal(core.load().running, 1);
  core.finishStep(d);
  auditKv(core);
  assert.deepEqual(rec.of('a'), ['0 prefill a']);
  runLoop(core, [], () => auditKv(core), d);
  assert.deepEqual(rec.of('a'), ['0 prefill a']);
  assert.equal(rec.of('b').at(-1), '50 finish b');
  assert.equal(core.load().kvUsedBlocks, 0);
});

test('a listener may cancel any request while tokens are being emitted', () => {
  const rec = new Recorder();
  const { core } = replica({}, rec);
  const onToken = rec.onToken.bind(rec);
  rec.onToken = (r, at, i) => {
    onToken(r, at, i);
    // b cancels a (admitted before it) and c (after it), and then itself.
    if (r.id === 'b' && i === 2) for (const id of ['a', 'c', 'b']) core.cancel(id, at);
  };
  for (const id of ['a', 'b', 'c']) core.add(req(id, 10, 8), 0);
  runLoop(core, [], () => auditKv(core));
  // a's token of that step came before b's; c, after b in the batch, gets none.
  assert.equal(rec.of('a').at(-1), '30 token a 2');
  assert.equal(rec.of('b').at(-1), '30 token b 2');
  assert.equal(rec.of('c').at(-1), '20 token c 1');
  assert.equal(core.load().kvUsedBlocks, 0);
  assert.ok(core.idle);
});

test('cancelling a swapped-out request frees its host blocks', () => {
  const { core } = replica({
    numGpuBlocks: 10,
    maxBatchedTokens: 256,
    preemption: 'swap',
    numCpuBlocks: 100,
  });
  core.add(req('a', 64, 50), 0);
  core.add(req('b', 64, 50), 0);
  let now = 0;
  while (core.kv.hostUsedBlocks === 0) now = step(core, now);
  core.cancel('b', now);
  assert.equal(core.kv.hostUsedBlocks, 0);
  runLoop(core, [], () => auditKv(core));
  assert.equal(core.stats().finished, 1);
});

test('same inputs give the identical event sequence', () => {
  const arrivals: Arrival[] = [];
  for (let i = 0; i < 200; i++) {
    const hashes = Array.from({ length: 4 }, (_, j) => `f${i % 5}-${j}`);
    arrivals.push({
      atMs: i * 3,
      req: req(`r${i}`, 20 + ((i * 37) % 90), 1 + ((i * 53) % 60), hashes),
    });
  }
  const once = () => {
    const { rec, core } = replica({
      numGpuBlocks: 30,
      enablePrefixCaching: true,
      preemption: 'swap',
      numCpuBlocks: 8,
    });
    runLoop(core, arrivals);
    return { lines: rec.lines, stats: core.stats() };
  };
  const a = once();
  const b = once();
  assert.ok(a.stats.preemptions > 0);
  assert.deepEqual(a.lines, b.lines);
  assert.deepEqual(a.stats, b.stats);
});

test('the core refuses out-of-order driving and malformed requests', () => {
  const { core } = replica();
  assert.equal(core.startStep(0), null);
  assert.throws(() => core.finishStep(0), { name: 'EngineInvariantError' });
  core.add(req('a', 10, 2), 0);
  core.startStep(0);
  assert.throws(() => core.startStep(0), { name: 'EngineInvariantError' });
  assert.throws(() => core.add(req('a', 10, 2), 0), { name: 'EngineInvariantError' });
  assert.throws(() => core.add(req('z', 10, 0), 0), { name: 'EngineInvariantError' });
});

test('randomised cancels, between steps and from inside events, under preemption', () => {
  for (const preemption of ['recompute', 'swap'] as const) {
    let s = 12345;
    const rand = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0), s / 2 ** 32);
    const rec = new Recorder();
    const cfg = { numGpuBlocks: 24, blockSize: 4, maxNumSeqs: 6, maxBatchedTokens: 24 };
    const { core } = replica(
      { ...cfg, preemption, numCpuBlocks: 10, enablePrefixCaching: true },
      rec,
    );
    const linesAtCancel = new Map<string, number>();
    const cancel = (id: string, at: number) => {
      const known = rec.of(id).length;
      if (core.cancel(id, at)) linesAtCancel.set(id, known);
    };
    const onToken = rec.onToken.bind(rec);
    rec.onToken = (r, at, i) => {
      onToken(r, at, i);
      if (rand() < 0.01) cancel(`r${Math.floor(rand() * 200)}`, at);
    };
    const arrivals: Arrival[] = [];
    for (let i = 0; i < 200; i++) {
      const input = 1 + Math.floor(rand() * 50);
      const hashes = Array.from({ length: Math.ceil(input / 4) }, (_, j) => `f${i % 3}-${j}`);
      arrivals.push({
        atMs: i * 2,
        req: req(`r${i}`, input, 1 + Math.floor(rand() * 40), hashes, 4),
      });
    }
    runLoop(core, arrivals, (now) => {
      auditKv(core);
      if (rand() < 0.05) cancel(`r${Math.floor(rand() * 200)}`, now);
    });
    assert.ok(linesAtCancel.size > 10);
    assert.ok(core.stats().preemptions > 0);
    for (const a of arrivals) {
      const id = a.req.id;
      const at = linesAtCancel.get(id);
      if (at === undefined) assertTokensInOrder(rec, id, a.req.outputTokens);
      else assert.equal(rec.of(id).length, at, `${id} emitted after its cancel`);
    }
    assert.deepEqual(core.load(), {
      running: 0,
      waiting: 0,
      kvUsedBlocks: 0,
      kvTotalBlocks: 24,
      pendingPrefillTokens: 0,
    });
    assert.equal(core.kv.hostUsedBlocks, 0);
  }
});

test('a request cancelled by a listener during step-start events gets none of its own', () => {
  const rec = new Recorder();
  const { core } = replica({}, rec);
  const onPrefillStart = rec.onPrefillStart.bind(rec);
  rec.onPrefillStart = (r, at) => {
    onPrefillStart(r, at);
    if (r.id === 'a') core.cancel('b', at);
  };
  core.add(req('a', 10, 2), 0);
  core.add(req('b', 10, 2), 0);
  runLoop(core, [], () => auditKv(core));
  assert.deepEqual(rec.of('b'), []);
  assert.equal(rec.of('a').at(-1), '20 finish a');
});
