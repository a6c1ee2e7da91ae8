import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineConfig, EngineRequest } from './engine-types.ts';
import {
  Recorder,
  assertTokensInOrder,
  auditKv,
  constProfile,
  recordingProfile,
  req,
  runLoop,
  testConfig,
} from './engine-test-kit.ts';
import { ReplicaCore } from './replica.ts';
import { Seq } from './sequence.ts';
import { idleFromBack, seatVictim, slackOf, slackVictim } from './victims.ts';
import type { StepShape } from './timing/profile.ts';

/** A batch request admitted first, an interactive stream admitted after it, KV for neither to finish. */
function pressured(over: Partial<EngineConfig>): Recorder {
  const rec = new Recorder();
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ numGpuBlocks: 10, maxBatchedTokens: 256, ...over }),
    constProfile(10),
    rec,
  );
  core.add({ ...req('batch', 64, 50), e2eDeadlineMs: 3_600_000 }, 0);
  core.add({ ...req('chat', 64, 50), ttftDeadlineMs: 2_000, itlSloMs: 80 }, 0);
  runLoop(core, [], () => auditKv(core));
  assertTokensInOrder(rec, 'batch', 50);
  assertTokensInOrder(rec, 'chat', 50);
  return rec;
}

const preemptions = (rec: Recorder, id: string) =>
  rec.of(id).filter((l) => l.includes('preempt')).length;

test('victims: newest-first preempts the interactive stream admitted last; slack takes the batch request', () => {
  const newest = pressured({});
  assert.ok(preemptions(newest, 'chat') > 0, 'vLLM takes the most recently admitted');
  assert.equal(preemptions(newest, 'batch'), 0);
  const slack = pressured({ preemptionVictims: 'slack' });
  assert.equal(preemptions(slack, 'chat'), 0, 'a streaming 80 ms gap objective has 80 ms of slack');
  assert.ok(preemptions(slack, 'batch') > 0, 'an hour-long deadline has the most');
});

function seq(r: EngineRequest, emitted: number): Seq<EngineRequest> {
  const s = new Seq(r, r.outputTokens, 16, false);
  s.emitted = emitted;
  return s;
}

test('slack: time to the first-token deadline, then the gap objective, bounded by the completion deadline', () => {
  const step = () => 20;
  const waiting = seq({ ...req('w', 100, 10), ttftDeadlineMs: 1_500, itlSloMs: 80 }, 0);
  assert.equal(slackOf(waiting, 1_000, step), 500);
  const streaming = seq({ ...req('s', 100, 10), ttftDeadlineMs: 1_500, itlSloMs: 80 }, 3);
  assert.equal(slackOf(streaming, 1_000, step), 80);
  // 7 tokens left at 20 ms a step: due at 1,140, 60 ms to spare.
  const dueSoon = seq({ ...req('d', 100, 10), e2eDeadlineMs: 1_200 }, 3);
  assert.equal(slackOf(dueSoon, 1_000, step), 60);
  assert.equal(slackOf(seq(req('b', 100, 10), 3), 1_000, step), Infinity);
});

test('slack victim: the lowest priority first under priority scheduling, then the most slack, ties to the newest', () => {
  const step = () => 20;
  const a = seq({ ...req('a', 10, 10), priority: 0 }, 1);
  const b = seq({ ...req('b', 10, 10), priority: 2, e2eDeadlineMs: 5_000 }, 1);
  const c = seq({ ...req('c', 10, 10), priority: 2, e2eDeadlineMs: 9_000 }, 1);
  const d = seq({ ...req('d', 10, 10), priority: 1 }, 1);
  assert.equal(slackVictim([a, b, c, d], 0, true, 0, step), 2, 'priority 2, the most slack');
  assert.equal(slackVictim([a, b, c, d], 0, false, 0, step), 3, 'FCFS: d has no deadline');
  assert.equal(slackVictim([a, b, c, d], 3, true, 0, step), 3, 'only from the index given');
  const e = seq(req('e', 10, 10), 1);
  assert.equal(slackVictim([a, e, d], 0, false, 0, step), 2, 'equal slack: the newest');
});

test('decode budget: no step carries more decodes than the budget, the front first; every token still emitted', () => {
  const shapes: StepShape[] = [];
  const rec = new Recorder();
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ decodeTokenBudget: 2, schedulingPolicy: 'priority' }),
    recordingProfile(10, shapes),
    rec,
  );
  for (const [id, priority] of [
    ['low1', 2],
    ['high1', 0],
    ['low2', 2],
    ['high2', 0],
  ] as const) {
    core.add({ ...req(id, 32, 20), priority }, 0);
  }
  runLoop(core, [], () => auditKv(core));
  assert.ok(shapes.every((s) => s.decodeSeqs <= 2));
  for (const id of ['low1', 'high1', 'low2', 'high2']) assertTokensInOrder(rec, id, 20);
  const finish = (id: string) => Number(rec.of(id).at(-1)?.split(' ')[0]);
  // The high-priority pair decodes every step; the low pair waits for their budget.
  assert.ok(Math.max(finish('high1'), finish('high2')) < Math.min(finish('low1'), finish('low2')));
  assert.ok(core.stats().decodesDeferred > 0);
  const unbudgeted = new ReplicaCore<EngineRequest>(testConfig(), constProfile(10), new Recorder());
  unbudgeted.add(req('x', 32, 20), 0);
  unbudgeted.add(req('y', 32, 20), 0);
  runLoop(unbudgeted);
  assert.equal(unbudgeted.stats().decodesDeferred, 0);
});

test('seat victim: the last scheduled sequence, if its priority is strictly lower; idle ones skipped', () => {
  const a = seq({ ...req('a', 10, 10), priority: 0 }, 1);
  const b = seq({ ...req('b', 10, 10), priority: 2 }, 1);
  const held = seq({ ...req('h', 10, 10), priority: 3 }, 1);
  held.held = true;
  assert.equal(seatVictim([a, b, held], 1), b, 'the held one keeps no seat to give');
  assert.equal(seatVictim([a, b], 2), undefined, 'equal priority keeps its seat');
  assert.equal(idleFromBack([a, held, b], 0), 1);
  assert.equal(idleFromBack([a, held, b], 1), -1, 'only after the index given');
});
