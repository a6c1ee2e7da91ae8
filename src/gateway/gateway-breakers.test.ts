// The gateway's circuit breakers, on a virtual clock with scripted backends: thresholds come
// from the policy, a half-open backend gets one probe at a time (not all traffic), every change
// is a metric and a log line, no usable backend is its own refusal with a Retry-After from the
// next probe, and nothing but the backend's own failures opens a breaker. And a request the
// gateway stops while it waits (a drain out of time) is accounted, the backend untouched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolvePolicy } from '../core/config/policy.ts';
import type { LlmRequest } from '../core/request/request.ts';
import { ENGINE_DEFAULTS, buildEngineConfig, buildEngineProfile } from '../engine/engine-spec.ts';
import { VirtualClock } from '../runtime/virtual-clock.ts';
import {
  UpstreamError,
  type Backend,
  type BackendLoad,
  type StreamEnd,
  type TokenSink,
  type UpstreamCall,
} from './backend.ts';
import { Gateway } from './gateway.ts';
import { GatewayMetrics } from './gateway-metrics.ts';
import { memoryOpsLog } from './ops-log.ts';
import { fleetSpecFor } from './fleet-spec-for.ts';
import { RequestStopped } from './stop.ts';
import { SILENT_UNPREDICTED_MS } from './upstream-attempt.ts';
import type { DecisionRecord } from '../core/observe/decision-record.ts';

type Mode = 'ok' | 'down' | 'http-500' | 'http-400' | 'bug' | 'hang' | 'http-401' | 'past-cap';

/** A backend that does what its mode says, and counts the calls it got. */
class ScriptedBackend implements Backend {
  readonly name: string;
  mode: Mode = 'ok';
  calls = 0;
  private readonly clock: VirtualClock;

  constructor(name: string, clock: VirtualClock) {
    this.name = name;
    this.clock = clock;
  }

  load(): BackendLoad {
    return { ready: true, running: 0, waiting: 0, kvUsage: 0, atMs: this.clock.now() };
  }

  async stream(call: UpstreamCall, onToken: TokenSink): Promise<StreamEnd> {
    this.calls++;
    switch (this.mode) {
      case 'ok':
        onToken({ text: 'x' });
        return { finishReason: 'stop', promptTokens: 1, completionTokens: 1 };
      case 'past-cap':
        onToken({ text: 'x' });
        return { finishReason: 'length', promptTokens: 1, completionTokens: 1, pastCap: true };
      case 'down':
        throw new UpstreamError(`${this.name}: connect ECONNREFUSED`, undefined, true);
      case 'http-500':
        throw new UpstreamError(`${this.name}: HTTP 500`, 500, true);
      case 'http-400':
        throw new UpstreamError(`${this.name}: HTTP 400`, 400, true, '{"error":{}}');
      case 'http-401':
        throw new UpstreamError(`${this.name}: HTTP 401`, 401, true, '{"error":{}}');
      case 'bug':
        throw new TypeError('a bug of the gateway, not of the backend');
      case 'hang':
        return await new Promise((_, reject) =>
          call.signal.addEventListener('abort', () => reject(call.signal.reason), { once: true }),
        );
    }
  }

  async close(): Promise<void> {}
}

const spec = { ...ENGINE_DEFAULTS, profile: 'const:step_ms=2' };

function setup(backends = 2, policyDoc: Record<string, unknown> = {}) {
  const clock = new VirtualClock();
  const log = memoryOpsLog();
  const metrics = new GatewayMetrics([]);
  const fleet = Array.from({ length: backends }, (_, i) => new ScriptedBackend(`b${i}`, clock));
  const policy = resolvePolicy({
    name: 't',
    policy_revision: 't@1',
    admission: { type: 'admit-all' },
    routing: { type: 'round-robin' },
    resilience: { circuit_breaker: { consecutive_failures: 2, open_ms: 1_000 } },
    ...policyDoc,
  });
  const records: DecisionRecord[] = [];
  const gateway = new Gateway({
    policy,
    spec: fleetSpecFor(buildEngineConfig(spec), buildEngineProfile(spec), 'llama-3-8b'),
    backends: fleet,
    clock,
    timers: clock,
    metrics,
    log,
    onDecision: (r) => records.push(r),
  });
  let n = 0;
  const request = (): LlmRequest => ({
    id: `r${++n}`,
    arrivalMs: clock.now(),
    inputTokens: 10,
    outputTokens: 0,
    maxTokens: 1,
    tenant: 'default',
    sloClass: 'interactive',
  });
  /** One request through admit and run, as the HTTP layer drives it. */
  const send = async (signal = new AbortController().signal) => {
    const admitted = await gateway.admit(request(), signal);
    if (admitted.kind !== 'dispatched') return admitted;
    const done = gateway.run(admitted.ticket, 'chat', { model: 'llama-3-8b' }, signal, () => {});
    return await done.then(
      () => ({ kind: 'served' as const, backend: admitted.ticket.replica }),
      (e: unknown) => ({ kind: 'failed' as const, backend: admitted.ticket.replica, e }),
    );
  };
  const state = async (backend: string) => {
    const text = await metrics.registry.metrics();
    const on = /goodput_backend_breaker_state\{backend="([^"]+)",state="([^"]+)"\} 1/g;
    for (const [, b, s] of text.matchAll(on)) if (b === backend) return s;
    return undefined;
  };
  return { clock, log, metrics, fleet, gateway, send, state, records };
}

test('a backend failing on its own opens its breaker at the policy threshold, and leaves the fleet', async () => {
  const { fleet, gateway, send, state, log } = setup(1);
  fleet[0].mode = 'down';
  assert.equal((await send()).kind, 'failed');
  assert.equal(await state('b0'), 'closed', 'one failure: below the threshold of 2');
  assert.equal((await send()).kind, 'failed');
  assert.equal(await state('b0'), 'open');
  assert.deepEqual(gateway.snapshots(), []);
  assert.ok(
    log.lines.some((l) => l.msg === 'circuit breaker closed → open' && l.fields.backend === 'b0'),
  );
  const calls = fleet[0].calls;
  const refused = await send();
  assert.equal(fleet[0].calls, calls, 'an open backend gets no traffic');
  assert.deepEqual(
    refused.kind === 'rejected' && [refused.decision.reason, refused.decision.status],
    ['no_ready_replica', 503],
  );
});

test("a backend refusing the gateway's own credentials (401) fails on its own: its breaker opens", async () => {
  const { fleet, send, state } = setup(1);
  fleet[0].mode = 'http-401';
  assert.equal((await send()).kind, 'failed', 'the backend’s failure, not the request’s');
  await send();
  assert.equal(await state('b0'), 'open');
});

test('a backend that streams past max_tokens: served as cut there, a success, and said once', async () => {
  const { fleet, send, state, log } = setup(1);
  fleet[0].mode = 'past-cap';
  for (let i = 0; i < 3; i++) assert.equal((await send()).kind, 'served');
  assert.equal(await state('b0'), 'closed');
  const told = log.lines.filter((l) => /more tokens than max_tokens/.test(l.msg));
  assert.deepEqual(
    told.map((l) => [l.level, l.fields.backend]),
    [['warn', 'b0']],
  );
});

test('no usable backend: 503 no_ready_replica, Retry-After from the next probe', async () => {
  const { clock, fleet, send } = setup(2);
  for (const b of fleet) b.mode = 'http-500';
  for (let i = 0; i < 4; i++) await send();
  clock.run(clock.now() + 400);
  const refused = await send();
  assert.ok(refused.kind === 'rejected');
  assert.equal(refused.decision.reason, 'no_ready_replica');
  assert.equal(refused.decision.retryAfterMs, 600, 'the breakers probe 1,000 ms after opening');
});

test('half-open: one probe at a time, not all traffic; its success closes the breaker', async () => {
  const { clock, fleet, gateway, send, state } = setup(1);
  fleet[0].mode = 'down';
  await send();
  await send();
  clock.run(clock.now() + 1_000);
  assert.equal(gateway.snapshots()[0]?.probe, true);
  assert.equal(await state('b0'), 'half-open', 'the watch saw the change unasked');
  fleet[0].mode = 'hang';
  const stop = new AbortController();
  const probe = send(stop.signal);
  await new Promise((r) => setImmediate(r));
  assert.equal(fleet[0].calls, 3, 'the probe went');
  const others = await Promise.all(Array.from({ length: 5 }, () => send()));
  assert.equal(fleet[0].calls, 3, 'nothing else while the probe is out');
  for (const o of others)
    assert.equal(o.kind === 'rejected' && o.decision.reason, 'no_ready_replica');
  // The probe's client leaves: no verdict, and the next probe may go.
  stop.abort(new RequestStopped('client_closed'));
  await probe;
  assert.equal(await state('b0'), 'half-open');
  fleet[0].mode = 'ok';
  assert.equal((await send()).kind, 'served');
  assert.equal(await state('b0'), 'closed');
});

test('only the backend’s own failures count: a gateway bug, a 4xx, a client gone, a deadline do not', async () => {
  const { fleet, send, state, gateway, metrics } = setup(1);
  for (const mode of ['bug', 'http-400', 'hang', 'hang'] as const) {
    fleet[0].mode = mode;
    for (let i = 0; i < 3; i++) {
      const stop = new AbortController();
      const pending = send(stop.signal);
      if (mode === 'hang') {
        await new Promise((r) => setImmediate(r));
        const why = i % 2 === 0 ? 'client_closed' : 'deadline_exceeded';
        stop.abort(new RequestStopped(why));
      }
      assert.equal((await pending).kind, 'failed');
    }
  }
  assert.equal(await state('b0'), 'closed');
  assert.equal(gateway.snapshots().length, 1, 'still in the fleet');
  const text = await metrics.registry.metrics();
  assert.doesNotMatch(text, /breaker_transitions_total\{[^}]*\} [1-9]/);
});

test('a backend silent long past when a token should have come: the attempts stopped there count against it', async () => {
  const { clock, fleet, send, state, gateway, metrics } = setup(1);
  fleet[0].mode = 'hang';
  // Without a prediction (admit-all assesses nothing), 30 s of silence is the backend's.
  for (const why of ['deadline_exceeded', 'client_closed'] as const) {
    const stop = new AbortController();
    const pending = send(stop.signal);
    await new Promise((r) => setImmediate(r));
    clock.run(clock.now() + SILENT_UNPREDICTED_MS);
    stop.abort(new RequestStopped(why));
    assert.equal((await pending).kind, 'failed');
  }
  assert.equal(await state('b0'), 'open', 'two silences: its breaker opens');
  assert.equal(gateway.snapshots().length, 0, 'the silent backend leaves the fleet');
  const text = await metrics.registry.metrics();
  assert.match(text, /goodput_upstream_failures_total\{backend="b0",stage="silent"\} 2/);
});

/** What the log told of backend b0's readiness (its breaker's lines aside). */
function readinessTold(log: ReturnType<typeof memoryOpsLog>) {
  return log.lines.filter((l) => l.fields.backend === 'b0' && !l.msg.startsWith('circuit'));
}

test('a backend that goes down and comes back is told once each way', async () => {
  const { clock, fleet, gateway, log } = setup(1);
  let ready = true;
  fleet[0].load = () => ({
    ready,
    running: 0,
    waiting: 0,
    kvUsage: 0,
    atMs: clock.now(),
    why: 'stale',
  });
  gateway.snapshots();
  ready = false;
  clock.run(clock.now() + 3_000);
  ready = true;
  clock.run(clock.now() + 3_000);
  const told = readinessTold(log);
  assert.deepEqual(
    told.map((l) => [l.level, l.msg]),
    [
      ['info', 'backend b0 is ready'],
      ['warn', 'backend b0 is not ready'],
      ['info', 'backend b0 is ready'],
    ],
  );
  assert.equal(told[1].fields.cause, 'stale');
  await gateway.close();
});

test('a backend not ready since start: its cause said once, as news of no alarm, then its readiness', async () => {
  const { clock, fleet, gateway, log } = setup(1);
  let ready = false;
  let why: string | undefined = undefined;
  fleet[0].load = () => ({ ready, running: 0, waiting: 0, kvUsage: 0, atMs: clock.now(), why });
  gateway.snapshots();
  why = 'connect ECONNREFUSED 127.0.0.1:1';
  clock.run(clock.now() + 3_000);
  ready = true;
  clock.run(clock.now() + 3_000);
  assert.deepEqual(
    readinessTold(log).map((l) => [l.level, l.msg]),
    [
      ['info', 'backend b0 is not ready yet: connect ECONNREFUSED 127.0.0.1:1'],
      ['info', 'backend b0 is ready'],
    ],
  );
  await gateway.close();
});

test("a pool's stopped slot is down as meant: nothing said of it until the pool runs it", async () => {
  const { clock, fleet, gateway, log } = setup(2);
  let runs = false;
  gateway['fleet'].running((i) => i === 0 || runs);
  let ready = false;
  fleet[1].load = () => ({
    ready,
    running: 0,
    waiting: 0,
    kvUsage: 0,
    atMs: clock.now(),
    why: 'connect ECONNREFUSED 127.0.0.1:2',
  });
  gateway.snapshots();
  clock.run(clock.now() + 3_000);
  const told = () => log.lines.filter((l) => /^backend b\d is/.test(l.msg)).map((l) => l.msg);
  assert.deepEqual(told(), ['backend b0 is ready'], 'the stopped slot is not news');
  runs = true;
  clock.run(clock.now() + 3_000);
  ready = true;
  clock.run(clock.now() + 3_000);
  assert.deepEqual(told().slice(1), [
    'backend b1 is not ready yet: connect ECONNREFUSED 127.0.0.1:2',
    'backend b1 is ready',
  ]);
  await gateway.close();
});

test('a request waiting when the drain runs out is cut: its own outcome, its record, no breaker touched', async () => {
  const { clock, fleet, gateway, send, state, records } = setup(1, {
    dispatch: { type: 'flow-control' },
  });
  // A full KV cache: flow control holds every request at the gateway.
  fleet[0].load = () => ({ ready: true, running: 0, waiting: 0, kvUsage: 1, atMs: clock.now() });
  const stop = new AbortController();
  const waiting = send(stop.signal);
  await new Promise((r) => setImmediate(r));
  assert.equal(gateway.pipeline.waiting, true, 'it waits at the gateway');
  stop.abort(new RequestStopped('shutting_down'));
  assert.deepEqual(await waiting, { kind: 'stopped', why: 'shutting_down' });
  assert.equal(gateway.pipeline.waiting, false, 'withdrawn from the queue');
  assert.equal(fleet[0].calls, 0);
  const last = records.at(-1);
  assert.deepEqual(
    [last?.admission.result, last?.admission.reason, last?.admission.status, last?.route],
    ['abort', 'shutting_down', 503, null],
  );
  assert.equal(await state('b0'), 'closed');
  await gateway.close();
});
