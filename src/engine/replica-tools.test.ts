// Sequences paused for tool calls, stepped by hand: the pause takes the sequence out of
// scheduling (kept: in the batch with its blocks; swapped: its blocks on the host; dropped:
// freed), the resume prefills the tool's result (and, dropped, the whole context again) before
// the next token, and the KV books balance at every step — cancels while paused included.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineConfig, EngineRequest } from './engine-types.ts';
import {
  Recorder,
  assertTokensInOrder,
  auditKv,
  constProfile,
  driveTimed,
  recordingProfile,
  testConfig,
} from './engine-test-kit.ts';
import { ReplicaCore } from './replica.ts';
import { contextLimits } from './sequence.ts';
import type { StepShape } from './timing/profile.ts';

const agent = (id: string): EngineRequest => ({
  id,
  inputTokens: 100,
  outputTokens: 6,
  toolCalls: [{ afterTokens: 3, waitMs: 50, resultTokens: 40 }],
});

/** Steps until the core goes idle, resuming paused sequences when their tools return. */
function drive(core: ReplicaCore<EngineRequest>, cancelAt?: { id: string; afterPauses: number }) {
  let now = 0;
  const resumes: { id: string; atMs: number }[] = [];
  let pauses = 0;
  for (let i = 0; i < 1_000; i++) {
    for (const r of resumes.filter((r) => r.atMs <= now)) core.resume(r.id, now);
    resumes.splice(0, resumes.length, ...resumes.filter((r) => r.atMs > now));
    const d = core.startStep(now);
    if (d === null) {
      if (resumes.length === 0) return now;
      now = Math.min(...resumes.map((r) => r.atMs));
      continue;
    }
    now += d;
    core.finishStep(now);
    auditKv(core);
    const taken = core.takePauses();
    resumes.push(...taken);
    pauses += taken.length;
    if (cancelAt !== undefined && pauses >= cancelAt.afterPauses && taken.length > 0) {
      core.cancel(cancelAt.id, now);
      auditKv(core);
    }
  }
  throw new Error('did not finish');
}

for (const toolKv of ['keep', 'swap', 'drop'] as const) {
  test(`tool pause with KV ${toolKv}: every token once, in order; the result prefilled; books balanced`, () => {
    const rec = new Recorder();
    const config: EngineConfig = testConfig({ toolKv, preemption: 'swap' });
    const core = new ReplicaCore<EngineRequest>(config, constProfile(10), rec);
    core.add(agent('a'), 0);
    core.add(agent('b'), 0);
    const end = drive(core);
    for (const id of ['a', 'b']) assertTokensInOrder(rec, id, 6);
    const stats = core.stats();
    const key = { keep: 'toolPausesKeep', swap: 'toolPausesSwap', drop: 'toolPausesDrop' } as const;
    assert.equal(stats[key[toolKv]], 2);
    assert.equal(stats.toolResumes, 2);
    assert.ok(end >= 50, 'it waited for its tool');
    // Each: its prompt (100), then its last token before the call and the result (1 + 40);
    // dropped, the 102 tokens that were in KV are computed again too.
    const again = toolKv === 'drop' ? 2 * 102 : 0;
    assert.equal(stats.prefillTokens, 2 * (100 + 41) + again);
    assert.equal(core.load().kvUsedBlocks, 0);
    assert.equal(core.load().pendingPrefillTokens, 0);
    assert.ok(core.idle);
  });

  test(`a request cancelled while paused (KV ${toolKv}) frees what it held`, () => {
    const core = new ReplicaCore<EngineRequest>(
      testConfig({ toolKv, preemption: 'swap' }),
      constProfile(10),
      new Recorder(),
    );
    core.add(agent('a'), 0);
    core.add(agent('b'), 0);
    drive(core, { id: 'a', afterPauses: 1 });
    assert.equal(core.load().kvUsedBlocks, 0);
    assert.equal(core.kv.hostUsedBlocks, 0);
    assert.equal(core.load().waiting, 0);
    assert.equal(core.load().pendingPrefillTokens, 0);
    assert.equal(core.stats().cancelled, 1);
  });
}

for (const c of [
  {
    name: 'a kept pause holds its KV but not its seat: a waiting request runs meanwhile',
    output: 2,
  },
  {
    // c outlasts a's 50 ms tool: a is back before c's seat frees.
    name: 'a kept pause whose tool returns to a full batch waits for a seat, its KV held; then goes on',
    output: 20,
  },
]) {
  test(c.name, () => {
    const rec = new Recorder();
    const core = new ReplicaCore<EngineRequest>(
      testConfig({ toolKv: 'keep', maxNumSeqs: 1 }),
      constProfile(10),
      rec,
    );
    core.add(agent('a'), 0);
    core.add({ id: 'c', inputTokens: 20, outputTokens: c.output }, 0);
    // drive() audits every step: never more scheduled than max_num_seqs.
    drive(core);
    assertTokensInOrder(rec, 'a', 6);
    assertTokensInOrder(rec, 'c', c.output);
    // c ran and finished while a's tool ran (or a waited for c's seat), a's KV kept.
    const cDone = rec.lines.findIndex((l) => l.endsWith('finish c'));
    const aResumed = rec.lines.findIndex((l) => l.includes('token a 3'));
    assert.ok(cDone >= 0 && cDone < aResumed, rec.lines.join('\n'));
  });
}

test('priority scheduling: a higher-priority arrival takes a seat from a lower-priority sequence, which keeps its KV and resumes', () => {
  const rec = new Recorder();
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ schedulingPolicy: 'priority', maxNumSeqs: 2 }),
    constProfile(10),
    rec,
  );
  core.add({ id: 'b1', inputTokens: 50, outputTokens: 20, priority: 2 }, 0);
  core.add({ id: 'b2', inputTokens: 50, outputTokens: 20, priority: 2 }, 0);
  let now = 0;
  for (let i = 0; i < 3; i++) {
    now += core.startStep(now) as number;
    core.finishStep(now);
  }
  core.add({ id: 'i', inputTokens: 30, outputTokens: 5, priority: 0 }, now);
  const kvBefore = core.load().kvUsedBlocks;
  drive(core);
  for (const [id, n] of [
    ['b1', 20],
    ['b2', 20],
    ['i', 5],
  ] as const)
    assertTokensInOrder(rec, id, n);
  assert.equal(core.stats().preemptionsKeep, 1);
  assert.equal(core.stats().preemptionsRecompute + core.stats().preemptionsSwap, 0);
  assert.ok(kvBefore > 0);
  // The interactive request finished before the held batch sequence did: it had the seat.
  const done = (id: string) => rec.lines.findIndex((l) => l.endsWith(`finish ${id}`));
  assert.ok(done('i') < Math.max(done('b1'), done('b2')));
  assert.ok(
    rec.lines.some((l) => l.includes('preempt') && l.includes('keep')),
    rec.lines.join('\n'),
  );
});

for (const preemption of ['recompute', 'swap'] as const) {
  test(`prefill-first steps: the only runnable sequence preempted beside a kept pause is planned again at once (${preemption})`, () => {
    const rec = new Recorder();
    const core = new ReplicaCore<EngineRequest>(
      testConfig({ chunkedPrefill: false, toolKv: 'keep', numGpuBlocks: 10, preemption }),
      constProfile(10),
      rec,
    );
    // a pauses after its first token for a long tool, keeping 4 of the 10 blocks, ahead of b in
    // the batch; b grows until it cannot, and only it can give way.
    const a: EngineRequest = {
      id: 'a',
      inputTokens: 60,
      outputTokens: 10,
      toolCalls: [{ afterTokens: 1, waitMs: 10_000, resultTokens: 5 }],
    };
    const end = driveTimed(core, [
      { atMs: 0, req: a },
      { atMs: 0, req: { id: 'b', inputTokens: 16, outputTokens: 120 } },
    ]);
    assertTokensInOrder(rec, 'a', 10);
    assertTokensInOrder(rec, 'b', 120);
    assert.ok(
      rec.lines.some((l) => l.includes('preempt b')),
      rec.lines.join('\n'),
    );
    // b went on long before a's tool returned: a gave up its KV for it.
    const bDone = Number(rec.of('b').at(-1)?.split(' ')[0]);
    assert.ok(bDone < 10_000 && end > 10_000, `b done at ${bDone}, end ${end}`);
  });
}

test("a second tool call's result is prefilled on top of the first's: the context keeps every result", () => {
  const shapes: StepShape[] = [];
  const rec = new Recorder();
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ toolKv: 'keep' }),
    recordingProfile(10, shapes),
    rec,
  );
  driveTimed(core, [
    {
      atMs: 0,
      req: {
        id: 'a',
        inputTokens: 20,
        outputTokens: 10,
        toolCalls: [
          { afterTokens: 3, waitMs: 50, resultTokens: 30 },
          { afterTokens: 6, waitMs: 50, resultTokens: 40 },
        ],
      },
    },
  ]);
  assertTokensInOrder(rec, 'a', 10);
  // The prompt, then each result with the token before it (kept KV: nothing else again).
  const prefilled = shapes.reduce((n, s) => n + s.prefillTokens, 0);
  assert.equal(prefilled, 20 + (30 + 1) + (40 + 1));
});

test('tool results count toward max_model_len: the output is capped, or the episode ends at a call whose result would reach it', () => {
  const agent = (resultTokens: number): EngineRequest => ({
    id: `a${resultTokens}`,
    inputTokens: 20,
    outputTokens: 40,
    toolCalls: [{ afterTokens: 5, waitMs: 10, resultTokens }],
  });
  // 20 + 30 results leave 14 of the 64 for output; a 40-token result would make the next
  // turn's prompt 65 tokens: it ends at the call.
  assert.deepEqual(contextLimits(agent(30), 64), { output: 14, toolTokens: 30 });
  assert.deepEqual(contextLimits(agent(40), 64), { output: 5, toolTokens: 0 });
  assert.deepEqual(contextLimits(agent(30), 8_192), { output: 40, toolTokens: 30 });
  for (const [result, tokens] of [
    [30, 14],
    [40, 5],
  ] as const) {
    const rec = new Recorder();
    const core = new ReplicaCore<EngineRequest>(
      testConfig({ maxModelLen: 64, toolKv: 'keep' }),
      constProfile(10),
      rec,
    );
    driveTimed(core, [{ atMs: 0, req: agent(result) }]);
    assertTokensInOrder(rec, `a${result}`, tokens);
  }
});
