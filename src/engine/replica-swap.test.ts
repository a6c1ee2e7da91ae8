import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineRequest } from './engine-types.ts';
import {
  Recorder,
  assertTokensInOrder,
  auditKv,
  constProfile,
  req,
  runLoop,
  testConfig,
} from './engine-test-kit.ts';
import { GPUS, kvBytesPerToken, MODELS } from './hardware.ts';
import { ReplicaCore } from './replica.ts';

// A host link slow enough that one 16-token block takes exactly 5 ms to move.
const blockBytes = 16 * kvBytesPerToken(MODELS['llama-3-8b']);
const slowLink = { ...GPUS.h100, hostLinkBytesPerMs: blockBytes / 5 };

function run(numCpuBlocks: number) {
  const rec = new Recorder();
  const durations: number[] = [];
  const config = testConfig({
    numGpuBlocks: 10,
    maxBatchedTokens: 256,
    preemption: 'swap',
    numCpuBlocks,
    gpu: slowLink,
  });
  const core = new ReplicaCore<EngineRequest>(config, constProfile(10), rec);
  core.add(req('a', 64, 50), 0);
  core.add(req('b', 64, 50), 0);
  let last = 0;
  runLoop(core, [], (now) => {
    durations.push(now - last);
    last = now;
    auditKv(core);
  });
  return { rec, core, durations };
}

test('swap mode moves the victim to host and back, charging the transfer into those steps', () => {
  const { rec, core, durations } = run(100);
  const st = core.stats();
  assert.equal(st.preemptionsSwap, 1);
  assert.equal(st.preemptionsRecompute, 0);
  assert.ok(rec.lines.some((l) => l.includes('preempt b swap')));
  // b resumes decoding where it was: no second prefill.
  assert.equal(rec.of('b').filter((l) => l.includes('prefill')).length, 1);
  assertTokensInOrder(rec, 'a', 50);
  assertTokensInOrder(rec, 'b', 50);
  // Out and back in: the same blocks cross the link twice, 5 ms each, in two separate steps.
  const moved = st.swapTransferBlocks / 2;
  assert.ok(moved >= 1);
  const slow = durations.filter((d) => d > 10);
  assert.deepEqual(slow, [10 + 5 * moved, 10 + 5 * moved]);
  assert.equal(st.busyMs, 10 * st.steps + 5 * st.swapTransferBlocks);
  assert.equal(core.kv.hostUsedBlocks, 0);
});

test('swap mode falls back to recompute when the host pool is full', () => {
  const { rec, core, durations } = run(1);
  assert.equal(core.stats().preemptionsSwap, 0);
  assert.equal(core.stats().preemptionsRecompute, 1);
  assert.ok(rec.lines.some((l) => l.includes('preempt b recompute')));
  assert.equal(rec.of('b').filter((l) => l.includes('prefill')).length, 2);
  assert.ok(durations.every((d) => d === 10));
  assertTokensInOrder(rec, 'b', 50);
});
