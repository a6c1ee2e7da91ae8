import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineRequest } from './engine-types.ts';
import {
  Recorder,
  constProfile,
  linearProfile,
  recordingProfile,
  req,
  runLoop,
  testConfig,
} from './engine-test-kit.ts';
import { ReplicaCore } from './replica.ts';
import type { StepShape } from './timing/profile.ts';

test('single request: TTFT is one step when the prompt fits the budget, chunked otherwise', () => {
  const cases = [
    { input: 50, output: 5, budget: 64, firstAt: 10, finishAt: 50 },
    { input: 64, output: 1, budget: 64, firstAt: 10, finishAt: 10 },
    { input: 150, output: 3, budget: 64, firstAt: 30, finishAt: 50 },
    { input: 129, output: 2, budget: 64, firstAt: 30, finishAt: 40 },
  ];
  for (const c of cases) {
    const rec = new Recorder();
    const core = new ReplicaCore<EngineRequest>(
      testConfig({ maxBatchedTokens: c.budget }),
      constProfile(10),
      rec,
    );
    core.add(req('a', c.input, c.output), 0);
    runLoop(core);
    const lines = rec.lines;
    assert.equal(lines[0], '0 prefill a');
    assert.equal(lines[1], `${c.firstAt} first a from=${c.firstAt - 10} cached=0`);
    const tokens = lines.filter((l) => l.includes(' token '));
    assert.equal(tokens.length, c.output - 1, JSON.stringify(c));
    tokens.forEach((l, i) => assert.equal(l, `${c.firstAt + 10 * (i + 1)} token a ${i + 1}`));
    assert.equal(lines.at(-1), `${c.finishAt} finish a`);
    assert.equal(core.load().kvUsedBlocks, 0);
    assert.ok(core.idle);
  }
});

test('chunked prefill charges each chunk by its tokens', () => {
  const rec = new Recorder();
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ maxBatchedTokens: 64 }),
    linearProfile(5, 0.1),
    rec,
  );
  core.add(req('a', 100, 2), 0);
  runLoop(core);
  // Chunks of 64 and 36 tokens, then one decode step of 5 ms.
  const first = 5 + 6.4 + (5 + 3.6);
  assert.deepEqual(rec.lines, [
    '0 prefill a',
    `${first} first a from=${5 + 6.4} cached=0`,
    `${first + 5} token a 1`,
    `${first + 5} finish a`,
  ]);
});

test('decodes and prefill chunks share a step within the token budget', () => {
  const shapes: StepShape[] = [];
  const rec = new Recorder();
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ maxBatchedTokens: 64 }),
    recordingProfile(10, shapes),
    rec,
  );
  runLoop(core, [
    { atMs: 0, req: req('a', 30, 4) },
    { atMs: 0, req: req('b', 30, 4) },
    { atMs: 5, req: req('c', 100, 2) },
  ]);
  // Step 1: a and b prefill together (60 ≤ 64). Step 2: two decodes + a 62-token chunk of c.
  assert.deepEqual(shapes[0], {
    prefillTokens: 60,
    prefillSeqs: 2,
    prefillAttnWork: 1800,
    decodeSeqs: 0,
    decodeContextTokens: 0,
  });
  assert.equal(shapes[1].decodeSeqs, 2);
  assert.equal(shapes[1].decodeContextTokens, 62);
  assert.equal(shapes[1].prefillTokens, 62);
  assert.equal(shapes[2].prefillTokens, 38);
  assert.equal(shapes[2].prefillAttnWork, 38 * 100);
  for (const s of shapes) assert.ok(s.decodeSeqs + s.prefillTokens <= 64);
  assert.ok(rec.lines.includes('30 first c from=20 cached=0'));
});

test('maxNumSeqs caps the running batch; the next starts when one finishes', () => {
  const shapes: StepShape[] = [];
  const rec = new Recorder();
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ maxNumSeqs: 3, maxBatchedTokens: 512 }),
    recordingProfile(10, shapes),
    rec,
  );
  const arrivals = ['a', 'b', 'c', 'd', 'e'].map((id, i) => ({ atMs: 0, req: req(id, 10, 3 + i) }));
  runLoop(core, arrivals, () => assert.ok(core.load().running <= 3));
  for (const s of shapes) assert.ok(s.decodeSeqs + s.prefillSeqs <= 3);
  // a finishes at 30 (3 tokens): d is admitted in the next step.
  assert.ok(rec.lines.includes('30 finish a'));
  assert.ok(rec.lines.includes('30 prefill d'));
  assert.equal(rec.lines.filter((l) => l.includes('finish')).length, 5);
});

test('a request arriving at an idle replica starts at once; busy time adds up', () => {
  const core = new ReplicaCore<EngineRequest>(testConfig(), constProfile(10), new Recorder());
  runLoop(core, [{ atMs: 100, req: req('a', 10, 3) }]);
  const st = core.stats();
  assert.equal(st.steps, 3);
  assert.equal(st.busyMs, 30);
  assert.equal(st.tokensGenerated, 3);
  assert.equal(st.finished, 1);
});
