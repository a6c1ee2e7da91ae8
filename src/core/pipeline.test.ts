// The pipeline's own rules: one execution per idempotency key at a time, and every decision
// leaves a record.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Pipeline } from './pipeline.ts';
import { presetPolicy } from './config/presets.ts';
import { resolveTenants } from './config/tenant-schema.ts';
import { SPEC, request } from './admission/admission-test-kit.ts';
import type { Ticket } from './queueing/ticket.ts';
import type { DecisionRecord } from './observe/decision-record.ts';
import type { ReplicaSnapshot } from './fleet/replica-snapshot.ts';
import type { StepShape } from './ports/step-time.ts';

const replicas: ReplicaSnapshot[] = [
  { index: 0, inFlight: 0, running: 0, waiting: 0, kvUsage: 0 },
  { index: 1, inFlight: 0, running: 0, waiting: 0, kvUsage: 0 },
];

function pipeline(policy: string) {
  const dispatched: Ticket<string>[] = [];
  const records: DecisionRecord[] = [];
  const p = new Pipeline<string>(presetPolicy(policy), SPEC, {
    dispatch: (t) => dispatched.push(t),
    expire: () => {},
    record: (r) => records.push(r),
  });
  return { p, dispatched, records };
}

for (const policy of ['baseline-vllm', 'goodput']) {
  test(`${policy}: a second attempt with a key in flight is a 409 duplicate, accepted once it ends`, () => {
    const { p, dispatched, records } = pipeline(policy);
    const first = p.offer(request({ id: 'a', idempotencyKey: 'k' }), 'h1', 0, replicas);
    assert.equal(first.outcome, 'queued');
    assert.equal(dispatched.length, 1);
    const dup = p.offer(request({ id: 'a#2', idempotencyKey: 'k', attempt: 2 }), 'h2', 5, replicas);
    assert.equal(dup.outcome, 'reject');
    assert.deepEqual(dup.outcome === 'reject' && [dup.decision.status, dup.decision.reason], [
      409,
      'duplicate',
    ]);
    p.end(dispatched[0], 10, true);
    const again = p.offer(
      request({ id: 'a#3', idempotencyKey: 'k', attempt: 3 }),
      'h3',
      9,
      replicas,
    );
    assert.equal(again.outcome, 'queued');
    assert.deepEqual(
      records.map((r) => [r.request_id, r.admission.result, r.route?.replica ?? null]),
      [
        ['a', 'admit', dispatched[0].replica],
        ['a#2', 'reject', null],
        ['a#3', 'admit', dispatched[1].replica],
      ],
    );
  });
}

for (const policy of ['baseline-vllm', 'goodput']) {
  test(`${policy}: a request for a LoRA adapter goes only where it is served; served nowhere, a 503`, () => {
    const { p, dispatched, records } = pipeline(policy);
    // Replica 0 lists no adapter, replica 1 lists a1 (as each one's /v1/models says).
    const fleet: ReplicaSnapshot[] = [
      { ...replicas[0], servable: [] },
      { ...replicas[1], servable: ['a1'] },
    ];
    for (let i = 0; i < 4; i++) {
      const o = p.offer(request({ id: `a${i}`, adapter: 'a1', inputTokens: 100 }), 'h', i, fleet);
      assert.equal(o.outcome, 'queued');
    }
    assert.deepEqual(
      dispatched.map((t) => t.replica),
      [1, 1, 1, 1],
    );
    // The base model goes anywhere, the listing aside.
    p.offer(request({ id: 'base', inputTokens: 100 }), 'h', 5, fleet);
    assert.equal(dispatched.length, 5);
    // With the one replica that serves it gone, nothing is ready for it: refused at once,
    // told when to come back, and recorded.
    const none = p.offer(request({ id: 'late', adapter: 'a1' }), 'h', 6, [fleet[0]]);
    assert.equal(none.outcome, 'reject');
    assert.deepEqual(none.outcome === 'reject' && [none.decision.status, none.decision.reason], [
      503,
      'no_ready_replica',
    ]);
    assert.ok(none.outcome === 'reject' && (none.decision.retryAfterMs ?? 0) > 0);
    assert.equal(records.at(-1)?.request_id, 'late');
  });
}

test("a client deadline inside admission's margin is out of reach: refused up front, before it is read", () => {
  // The goodput preset keeps a 50 ms margin under every prediction; the baseline none.
  const goodput = pipeline('goodput');
  for (const [deadlineMs, refused] of [
    [100, true],
    [149, true],
    [150, true],
    [151, false],
    [10_100, false],
  ] as const) {
    const asked = request({ id: `d${deadlineMs}`, deadlineMs, inputTokens: 10, maxTokens: 1 });
    const unread = goodput.p.refusedUnread(deadlineMs, 100);
    assert.equal(unread?.reason, refused ? 'deadline_exceeded' : undefined);
    const o = goodput.p.offer(asked, 'h', 100, replicas);
    assert.equal(goodput.records.at(-1)?.request_id, asked.id);
    if (refused) {
      assert.deepEqual(
        o.outcome === 'reject' && o.decision,
        unread,
        'the same refusal, read or not',
      );
      assert.equal(unread?.status, 504);
      assert.equal(unread?.retryAfterMs, undefined);
    } else if (o.outcome === 'reject') {
      // Past the margin the deadline gate judges it on its prediction.
      assert.equal(o.decision.reason, 'deadline');
    }
  }
  assert.equal(goodput.dispatched.at(-1)?.asked.id, 'd10100');
  const baseline = pipeline('baseline-vllm');
  assert.equal(baseline.p.refusedUnread(110, 100), undefined);
  assert.equal(baseline.p.refusedUnread(100, 100)?.reason, 'deadline_exceeded');
  assert.equal(
    baseline.p.offer(request({ id: 'b', deadlineMs: 110 }), 'h', 100, replicas).outcome,
    'queued',
  );
});

test('a withdrawn ticket releases its key and its place', () => {
  const { p, dispatched } = pipeline('goodput');
  // Two 7,000-token prompts take both replicas' next steps; a third would stall their streams.
  p.offer(request({ id: 'x', inputTokens: 7_000 }), 'hx', 0, replicas);
  p.offer(request({ id: 'y', inputTokens: 7_000 }), 'hy', 0, replicas);
  assert.equal(dispatched.length, 2);
  const first = p.offer(request({ id: 'a', idempotencyKey: 'k' }), 'h1', 1, replicas);
  assert.ok(first.outcome === 'queued' && first.ticket.state === 'queued');
  assert.equal(p.dispatcher.waiting.ahead(0, false), 1);
  p.withdraw(first.ticket);
  assert.equal(p.dispatcher.waiting.ahead(0, false), 0);
  assert.equal(
    p.offer(request({ id: 'b', idempotencyKey: 'k' }), 'h2', 2, replicas).outcome,
    'queued',
  );
});

test('disaggregated: the predicted TTFT counts the prefill pool backlog and the KV transfer', () => {
  const predicted = (backlogSteps: number | undefined, transfer?: (tokens: number) => number) => {
    const records: DecisionRecord[] = [];
    const spec = {
      ...SPEC,
      ...(transfer === undefined ? {} : { prefilledElsewhere: true, kvTransferMs: transfer }),
    };
    const p = new Pipeline<string>(presetPolicy('goodput'), spec, {
      dispatch: () => {},
      expire: () => {},
      record: (r) => records.push(r),
    });
    const snapshots = replicas.map((r) => ({ ...r, prefillBacklogSteps: backlogSteps }));
    p.offer(request({ id: 'a', inputTokens: 1_000 }), 'h', 0, snapshots);
    return records[0].admission.predicted_ttft_ms as number;
  };
  const colocated = predicted(undefined);
  const transfer = (tokens: number) => 2 + tokens / 1_000;
  // SPEC's step: 5 ms + prefill tokens / 100, so one full step of 8,192 tokens is 86.92 ms.
  const fullStepMs = 5 + SPEC.maxBatchedTokens / 100;
  const idle = predicted(0, transfer);
  const backlogged = predicted(1.5, transfer);
  assert.ok(Math.abs(idle - colocated - 3) < 1e-6, `transfer alone: ${idle} vs ${colocated}`);
  assert.ok(
    Math.abs(backlogged - idle - 1.5 * fullStepMs) < 1e-3,
    `1.5 backlog steps: ${backlogged} vs ${idle}`,
  );
  assert.equal(predicted(1.5, undefined), colocated, 'a backlog means nothing without a pool');
});

test('a cold start: the first replies to end are the shortest, so the prior holds until half have ended', () => {
  const { p, dispatched } = pipeline('goodput');
  const prior = presetPolicy('goodput').estimate.priorOutput.p50;
  for (let i = 0; i < 50; i++) {
    p.offer(request({ id: `r${i}`, inputTokens: 100, arrivalMs: i }), 'h', i, replicas);
  }
  const n = dispatched.length;
  assert.ok(n >= 42, `${n} of 50 dispatched`);
  // The minimum sample ends, each after 5 tokens: fewer than half of those dispatched.
  for (let i = 0; i < 20; i++) p.end(dispatched[i], 5, true, 100);
  const next = (id: string) =>
    p.offer(request({ id, inputTokens: 100, arrivalMs: 100 }), 'h', 100, replicas);
  const early = next('early');
  assert.ok(early.outcome !== 'reject');
  assert.equal(early.ticket.demand.output.p50, prior, 'the prior, not the 5 tokens seen');
  // Past half of those dispatched, what ended is taken as it is.
  const ended = Math.ceil((dispatched.length + 1) / 2);
  for (let i = 20; i < ended; i++) p.end(dispatched[i], 5, true, 100);
  const later = next('later');
  assert.ok(later.outcome !== 'reject');
  assert.equal(later.ticket.demand.output.p50, 5);
});

test('a request keeps the step share it was admitted under; one admitted after a cut gets the cut one', () => {
  const { p, dispatched } = pipeline('goodput');
  const first = p.offer(request({ id: 'a', inputTokens: 100 }), 'h1', 0, replicas);
  assert.equal(first.outcome === 'queued' && first.ticket.gapShare, 0.75);
  // Its client got a gap of 70 ms of its 80 ms objective, which no stall explains: a cut.
  p.gapDelivered(dispatched[0], 70, 100);
  assert.equal(p.dispatcher.flow.gapShare, 0.675);
  const second = p.offer(request({ id: 'b', inputTokens: 100 }), 'h2', 100, replicas);
  assert.equal(second.outcome === 'queued' && second.ticket.gapShare, 0.675);
  assert.equal(first.outcome === 'queued' && first.ticket.gapShare, 0.75);
});

/**
 * Two replicas holding 40 streams each, then running at `pace` times their profile. A step of n
 * decodes and a chunk of c prompt tokens takes 10 + c/100 + n/2 ms, so within 60 ms of an 80 ms
 * objective a replica holds 100 streams at its profile's pace, 28 at 2.5 times it, and 30
 * beside a 3,500-token prompt's chunk.
 */
function filled(pace: number) {
  const spec = {
    ...SPEC,
    stepTime: { stepMs: (s: StepShape) => 10 + s.prefillTokens / 100 + 0.5 * s.decodeSeqs },
  };
  const records: DecisionRecord[] = [];
  const dispatched: string[] = [];
  const p = new Pipeline<string>(presetPolicy('goodput'), spec, {
    dispatch: (t) => dispatched.push(t.req.id),
    expire: () => {},
    record: (r) => records.push(r),
  });
  for (let i = 0; i < 80; i++) {
    p.offer(
      request({ id: `r${i}`, inputTokens: 100, maxTokens: 20 + i }),
      `h${i}`,
      i * 0.01,
      replicas,
    );
  }
  assert.equal(dispatched.length, 80);
  for (const a of p.dispatcher.ledger.replicas) a.pace = pace;
  /** Offers `inputTokens` at 2 s: whether it was placed, and its decision record. */
  const offer = (inputTokens: number) => {
    p.offer(request({ id: 'x', inputTokens, maxTokens: 100 }), 'hx', 2, replicas);
    return { placed: dispatched.includes('x'), record: records.find((d) => d.request_id === 'x') };
  };
  return { offer };
}

/** Refused for the wait: the streams that must end first, past the queue-delay target. */
function refusedForDrain(record: DecisionRecord | undefined): void {
  const a = record?.admission;
  assert.equal(a?.result, 'reject');
  assert.equal(a.reason, 'deadline');
  assert.ok(a.queue_target_ms !== null && a.predicted_wait_ms !== null);
  assert.ok(a.predicted_wait_ms > a.queue_target_ms, JSON.stringify(a));
}

test('replicas running slower than their profile hold fewer streams: no place is promised that they lack', () => {
  assert.equal(filled(1).offer(100).placed, true);
  // 12 streams over what each replica holds at 2.5 times the profile: the wait counts the 25
  // that must end first, and the request is refused at once rather than queued behind them.
  const slow = filled(2.5).offer(100);
  assert.equal(slow.placed, false);
  refusedForDrain(slow.record);
});

test("the places counted are those of steps that carry the request's own prompt chunk", () => {
  // Beside a 3,500-token chunk a replica holds 30 streams, not 100: 21 of the 80 must end.
  // Counted without the chunk, the request was promised a place at the next dispatch.
  const long = filled(1).offer(3_500);
  assert.equal(long.placed, false);
  refusedForDrain(long.record);
});

test('reloaded tenants: refusals and offers from then on carry the new revision; an open ticket keeps its own', () => {
  const { p, dispatched, records } = pipeline('goodput');
  const before = p.offer(request({ id: 'a', tenant: 'acme' }), 'h', 0, replicas);
  assert.equal(before.outcome, 'queued');
  const policy = presetPolicy('goodput');
  const keyed = resolveTenants({ acme: { weight: 3 }, beta: {} });
  p.retenant(keyed, 'goodput@reloaded');
  assert.equal(p.revision, 'goodput@reloaded');
  assert.equal(p.policy.tenants.named.get('acme')?.weight, 3);
  assert.equal(p.vtc.weight('acme'), 3);
  // Only listed tenants now: an unlisted one is refused under the new revision.
  const stranger = p.offer(request({ id: 'b', tenant: 'stranger' }), 'h', 1, replicas);
  assert.equal(stranger.outcome, 'reject');
  p.offer(request({ id: 'c', tenant: 'beta' }), 'h', 2, replicas);
  p.cut(dispatched[0], 'shutting_down', 503, 3);
  assert.deepEqual(
    records.map((r) => [r.request_id, r.admission.result, r.policy_revision]),
    [
      ['a', 'admit', policy.revision],
      ['b', 'reject', 'goodput@reloaded'],
      ['c', 'admit', 'goodput@reloaded'],
      ['a', 'abort', policy.revision],
    ],
  );
});

test('a request offered between pumps is promised no place in the slow step the last one opened', () => {
  // Long prompts go slow beside any stream: the stall risk is no bar here.
  const base = presetPolicy('goodput');
  const policy = { ...base, dispatch: { ...base.dispatch, stallRisk: Infinity } };
  const dispatched: Ticket<string>[] = [];
  const p = new Pipeline<string>(policy, SPEC, {
    dispatch: (t) => dispatched.push(t),
    expire: () => {},
    record: () => {},
  });
  const one = [replicas[0]];
  const offer = (id: string, inputTokens: number, at: number) =>
    p.offer(request({ id, inputTokens, arrivalMs: at }), 'h', at, one);
  // A stream decodes; SPEC's step is 5 ms + 1 ms per 100 prompt tokens, so a prompt of 8,000
  // takes a slow step of 85 ms beside it, past the 72 ms the interactive class's 80 ms gap
  // leaves. A prompt placed in that same instant could share the step; one arriving 10 ms
  // later waits for it to end, and its prediction must say so.
  offer('stream', 100, 0);
  p.firstToken(dispatched[0], 6);
  assert.equal(offer('long', 8_000, 50).outcome, 'queued');
  assert.equal(dispatched.length, 2, 'the long prompt is placed, its step slow');
  const late = offer('late', 100, 60);
  assert.ok(late.outcome === 'queued');
  assert.equal(dispatched.length, 2, 'it waits for the slow step');
  const d = late.ticket.decision;
  assert.ok(d.outcome === 'admit' && d.assessment !== undefined);
  assert.ok(d.assessment.waitMs > 0, `a wait is predicted: ${d.assessment.waitMs} ms`);
});

test('a long prompt at a cold start is promised its turn: when the streams beside it can spare its stall', () => {
  const dispatched: Ticket<string>[] = [];
  const p = new Pipeline<string>(presetPolicy('goodput'), SPEC, {
    dispatch: (t) => dispatched.push(t),
    expire: () => {},
    record: () => {},
  });
  const one = [replicas[0]];
  // A toy engine on SPEC's clock: each step streams a token to every prompt prefilled by then.
  const stepMs = 5.1;
  const startMs = new Map<Ticket<string>, number>();
  let nowMs = 0;
  const placedAt = new Map<string, number>();
  const run = (untilMs: number) => {
    for (; nowMs < untilMs; nowMs += stepMs) {
      for (const t of dispatched) {
        if (!startMs.has(t)) {
          placedAt.set(t.asked.id, nowMs);
          startMs.set(t, nowMs + 5 + t.req.inputTokens / 100);
        }
        const at = startMs.get(t)!;
        if (at > nowMs) continue;
        if (t.entry?.streamed === 0) p.firstToken(t, nowMs - t.asked.arrivalMs);
        else p.token(t, nowMs);
      }
      p.pump(nowMs, one);
    }
  };
  const offer = (id: string, inputTokens: number) =>
    p.offer(request({ id, inputTokens, arrivalMs: nowMs }), 'h', nowMs, one);
  offer('a', 100);
  run(110);
  // A prompt of 6,000 tokens prefills in 65 ms, past the 54 ms a long prompt is (90% of the 60
  // ms step budget of an 80 ms gap): it waits for the stream to have ~100 gaps to spare, ~80
  // steps on. Its successor waits for its turn too: its own stream must get as far.
  const waits = ['long', 'next'].map((id) => {
    const o = offer(id, 6_000);
    assert.ok(o.outcome === 'queued', `${id} is admitted`);
    const d = o.ticket.decision;
    assert.ok(d.outcome === 'admit' && d.assessment !== undefined);
    return { id, offeredMs: nowMs, predicted: d.assessment.waitMs };
  });
  run(2_000);
  for (const w of waits) {
    const waited = placedAt.get(w.id)! - w.offeredMs;
    assert.ok(
      Math.abs(w.predicted - waited) <= 0.1 * waited,
      `${w.id}: predicted ${w.predicted} ms, waited ${waited} ms`,
    );
  }
});
