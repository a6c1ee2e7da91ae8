import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineRequest } from './engine-types.ts';
import {
  Recorder,
  assertTokensInOrder,
  auditKv,
  recordingProfile,
  req,
  runLoop,
  testConfig,
} from './engine-test-kit.ts';
import { ReplicaCore } from './replica.ts';
import type { StepShape } from './timing/profile.ts';

test('prefill-first: an arriving prompt takes a step of its own, whole, and the decodes wait', () => {
  const shapes: StepShape[] = [];
  const rec = new Recorder();
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ chunkedPrefill: false, maxBatchedTokens: 200 }),
    recordingProfile(10, shapes),
    rec,
  );
  runLoop(core, [
    { atMs: 0, req: req('a', 40, 6) },
    { atMs: 25, req: req('b', 150, 2) },
  ]);
  // a: prefill at 0–10, decodes at 10–20, 20–30; b arrives at 25 and its whole 150-token
  // prompt runs alone at 30–40 (no chunk, no decode of a); then both decode together.
  assert.deepEqual(
    shapes.map((s) => [s.prefillTokens, s.decodeSeqs]),
    [
      [40, 0],
      [0, 1],
      [0, 1],
      [150, 0],
      [0, 2],
      [0, 1],
      [0, 1],
    ],
  );
  assert.ok(rec.lines.includes('40 first b from=30 cached=0'), rec.lines.join('\n'));
  assert.ok(!rec.of('a').some((l) => l.startsWith('40 ')), 'a decoded during b’s prefill');
  assertTokensInOrder(rec, 'a', 6);
  assertTokensInOrder(rec, 'b', 2);
});

test('prefill-first: prompts are admitted FIFO while the budget holds whole ones', () => {
  const shapes: StepShape[] = [];
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ chunkedPrefill: false, maxBatchedTokens: 100 }),
    recordingProfile(10, shapes),
    new Recorder(),
  );
  for (const [id, n] of [
    ['a', 30],
    ['b', 50],
    ['c', 40],
    ['d', 10],
  ] as const)
    core.add(req(id, n, 1), 0);
  runLoop(core);
  // a + b fit (80); c (40) would not, and d may not pass it: FIFO, no skipping.
  assert.deepEqual(
    shapes.map((s) => [s.prefillTokens, s.prefillSeqs]),
    [
      [80, 2],
      [50, 2],
    ],
  );
});

test('chunked prefill: the same arrival is chunked into the decode steps instead', () => {
  const shapes: StepShape[] = [];
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ maxBatchedTokens: 64 }),
    recordingProfile(10, shapes),
    new Recorder(),
  );
  runLoop(core, [
    { atMs: 0, req: req('a', 40, 6) },
    { atMs: 25, req: req('b', 150, 2) },
  ]);
  assert.deepEqual(shapes[3], {
    prefillTokens: 63,
    prefillSeqs: 1,
    prefillAttnWork: 63 * 63,
    decodeSeqs: 1,
    decodeContextTokens: 43,
  });
});

test('multi-step: a decode round of N steps admits nothing; the arrival waits for its end', () => {
  const shapes: StepShape[] = [];
  const rec = new Recorder();
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ chunkedPrefill: false, maxBatchedTokens: 200, schedulerSteps: 4 }),
    recordingProfile(10, shapes),
    rec,
  );
  runLoop(core, [
    { atMs: 0, req: req('a', 40, 10) },
    { atMs: 15, req: req('b', 20, 1) },
  ]);
  // a's round of 4 decode steps starts at 10; b arrives at 15 but waits until 50.
  assert.ok(rec.lines.includes('50 prefill b'), rec.lines.join('\n'));
  assert.deepEqual(
    shapes.slice(0, 6).map((s) => s.prefillTokens),
    [40, 0, 0, 0, 0, 20],
  );
  assertTokensInOrder(rec, 'a', 10);
});

test('multi-step and prefill-first keep every KV invariant under preemption', () => {
  for (const preemption of ['recompute', 'swap'] as const) {
    const rec = new Recorder();
    const core = new ReplicaCore<EngineRequest>(
      testConfig({
        chunkedPrefill: false,
        maxBatchedTokens: 64,
        schedulerSteps: 5,
        numGpuBlocks: 12,
        numCpuBlocks: 8,
        preemption,
      }),
      recordingProfile(1, []),
      rec,
    );
    const arrivals = Array.from({ length: 40 }, (_, i) => ({
      atMs: i * 3,
      req: req(`r${i}`, 10 + ((i * 7) % 40), 5 + ((i * 11) % 30)),
    }));
    runLoop(core, arrivals, () => auditKv(core));
    for (const a of arrivals) assertTokensInOrder(rec, a.req.id, a.req.outputTokens);
    assert.ok(core.stats().preemptions > 0);
  }
});

test('a context of 100K tokens runs where the model allows it', () => {
  const rec = new Recorder();
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ maxModelLen: 131_072, maxBatchedTokens: 8192, numGpuBlocks: 10_000 }),
    recordingProfile(10, []),
    rec,
  );
  core.add(req('long', 100_000, 3), 0);
  runLoop(core);
  assert.ok(rec.lines.includes('130 first long from=120 cached=0'), rec.lines.join('\n'));
  assertTokensInOrder(rec, 'long', 3);
});
