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

test('blocks are taken as a sequence grows and all freed when it finishes', () => {
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ blockSize: 16 }),
    constProfile(10),
    new Recorder(),
  );
  core.add(req('a', 20, 20), 0);
  const used: number[] = [];
  runLoop(core, [], () => used.push(core.load().kvUsedBlocks));
  // After step j, KV holds 19 + j tokens (prompt 20, then one per decode): ceil(/16) blocks.
  const expected = Array.from({ length: 19 }, (_, i) => Math.ceil((20 + i) / 16));
  assert.deepEqual(used, [...expected, 0]);
});

test('under pressure the newest running sequence is preempted and recomputed, and every token is emitted once', () => {
  const rec = new Recorder();
  const config = testConfig({ numGpuBlocks: 10, maxBatchedTokens: 256 });
  const core = new ReplicaCore<EngineRequest>(config, constProfile(10), rec);
  core.add(req('a', 64, 50), 0);
  core.add(req('b', 64, 50), 0);
  runLoop(core, [], () => auditKv(core));
  assert.equal(rec.of('a').filter((l) => l.includes('preempt')).length, 0);
  const b = rec.of('b');
  const preemptAt = b.findIndex((l) => l.includes('preempt b recompute'));
  assert.ok(preemptAt > 0);
  assert.equal(b.filter((l) => l.includes('prefill b')).length, 2);
  assert.equal(b.filter((l) => l.includes('first b')).length, 1);
  assertTokensInOrder(rec, 'a', 50);
  assertTokensInOrder(rec, 'b', 50);
  assert.equal(core.stats().preemptionsRecompute, core.stats().preemptions);
  assert.equal(core.load().kvUsedBlocks, 0);
});

test('recomputation prefills the prompt plus every token emitted so far', () => {
  const prefills: number[] = [];
  const profile = {
    name: 'p',
    stepMs: (s: { prefillTokens: number }) => (prefills.push(s.prefillTokens), 10),
  };
  const rec = new Recorder();
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ numGpuBlocks: 10, maxBatchedTokens: 256 }),
    profile,
    rec,
  );
  core.add(req('a', 64, 50), 0);
  core.add(req('b', 64, 50), 0);
  runLoop(core);
  const preemptLine = rec.lines.find((l) => l.includes('preempt b'));
  const at = Number(preemptLine?.split(' ')[0]);
  const emittedBefore = rec
    .of('b')
    .filter((l) => Number(l.split(' ')[0]) <= at && /first|token/.test(l)).length;
  assert.ok(
    prefills.includes(64 + emittedBefore),
    `prefills ${prefills} lack ${64 + emittedBefore}`,
  );
});

test('randomised stress on a tiny pool: invariants hold every step and every request completes exactly', () => {
  const modes: Partial<EngineConfig>[] = [
    { preemption: 'recompute', enablePrefixCaching: false },
    { preemption: 'recompute', enablePrefixCaching: true },
    { preemption: 'swap', numCpuBlocks: 12, enablePrefixCaching: true },
    { preemption: 'swap', numCpuBlocks: 0, enablePrefixCaching: false },
    { preemption: 'recompute', enablePrefixCaching: true, schedulerSteps: 4 },
    { preemption: 'recompute', enablePrefixCaching: true, chunkedPrefill: false },
    { preemption: 'swap', numCpuBlocks: 12, chunkedPrefill: false, schedulerSteps: 3 },
  ];
  for (const [m, mode] of modes.entries()) {
    for (let seed = 1; seed <= 5; seed++) {
      const rand = lcg(seed * 7919 + m);
      const config = testConfig({
        numGpuBlocks: 24,
        blockSize: 4,
        maxNumSeqs: 6,
        maxBatchedTokens: 24,
        ...mode,
      });
      const rec = new Recorder();
      const core = new ReplicaCore<EngineRequest>(config, constProfile(1), rec);
      const arrivals: Arrival[] = [];
      const outputs = new Map<string, number>();
      let t = 0;
      for (let i = 0; i < 150; i++) {
        t += Math.floor(rand() * 6);
        const input = 1 + Math.floor(rand() * 50);
        const output = 1 + Math.floor(rand() * 40);
        const family = Math.floor(rand() * 3);
        const hashes = Array.from({ length: Math.ceil(input / 4) }, (_, j) => `f${family}-${j}`);
        arrivals.push({ atMs: t, req: req(`r${i}`, input, output, hashes, 4) });
        outputs.set(`r${i}`, output);
      }
      runLoop(core, arrivals, () => auditKv(core));
      let failed = 0;
      for (const [id, output] of outputs) {
        if (rec.of(id).some((l) => l.includes(' fail '))) failed++;
        else assertTokensInOrder(rec, id, output);
      }
      const st = core.stats();
      assert.ok(st.preemptions > 0, `mode ${m} seed ${seed}: no preemption`);
      assert.equal(st.finished + failed, 150);
      assert.equal(core.load().kvUsedBlocks, 0);
      assert.equal(core.kv.hostUsedBlocks, 0);
      assert.equal(core.load().pendingPrefillTokens, 0);
    }
  }
});

test('a sequence whose KV can never fit fails at once', () => {
  const rec = new Recorder();
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ numGpuBlocks: 4, blockSize: 16 }),
    constProfile(10),
    rec,
  );
  assert.equal(core.add(req('big', 65, 1), 3), false);
  // Its prompt fits, but prompt + output − 1 tokens of KV (69) never can.
  assert.equal(core.add(req('grows', 40, 30), 3), false);
  assert.equal(core.add(req('fits', 40, 25), 3), true);
  assert.deepEqual(rec.lines, [
    '3 fail big prompt_exceeds_kv_capacity',
    '3 fail grows prompt_exceeds_kv_capacity',
  ]);
  runLoop(core, [], () => auditKv(core));
  assertTokensInOrder(rec, 'fits', 25);
  assert.equal(core.stats().failed, 2);
});

test('a prompt of maxModelLen tokens fails; an output running past it is capped there', () => {
  const rec = new Recorder();
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ maxModelLen: 100 }),
    constProfile(10),
    rec,
  );
  assert.equal(core.add(req('long', 100, 1), 3), false);
  assert.equal(core.add(req('capped', 60, 100), 3), true);
  assert.deepEqual(rec.lines, ['3 fail long prompt_exceeds_max_model_len']);
  runLoop(core);
  assertTokensInOrder(rec, 'capped', 40);
});

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

test('a prompt whose KV a prefill instance sent: only its last token is computed; after a recompute preemption, all of it', () => {
  const prefills: number[] = [];
  const profile = {
    name: 'p',
    stepMs: (s: { prefillTokens: number }) => (prefills.push(s.prefillTokens), 10),
  };
  const rec = new Recorder();
  const core = new ReplicaCore<EngineRequest>(testConfig({ numGpuBlocks: 100 }), profile, rec);
  core.add({ ...req('d', 640, 5), kvTransferredTokens: 640 }, 0);
  runLoop(core, [], () => auditKv(core));
  assert.deepEqual(prefills, [1, 0, 0, 0, 0], 'one token to sample from, then decodes');
  assert.equal(core.stats().kvLoadedTokens, 639);
  assertTokensInOrder(rec, 'd', 5);

  // Two such requests on a pool that cannot hold both to the end: the preempted one recomputes
  // its prompt and what it emitted — the transferred KV is gone with its blocks.
  prefills.length = 0;
  const tight = new ReplicaCore<EngineRequest>(
    testConfig({ numGpuBlocks: 10, maxBatchedTokens: 256 }),
    profile,
    new Recorder(),
  );
  tight.add({ ...req('a', 64, 50), kvTransferredTokens: 64 }, 0);
  tight.add({ ...req('b', 64, 50), kvTransferredTokens: 64 }, 0);
  runLoop(tight, [], () => auditKv(tight));
  assert.equal(prefills[0], 2, 'both start from their last prompt token');
  assert.ok(tight.stats().preemptionsRecompute > 0);
  assert.ok(
    prefills.some((p) => p > 64),
    'a recompute prefills the prompt and its output',
  );
});
