// The autoscalers' rules: within the limits, deterministic, scale-in only after the
// stabilisation window and one group at a time, none on stale figures, and the goodput
// controller looking ahead by the ready time on the capacity it has seen.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AUTOSCALERS } from './controllers.ts';
import type { ScaleLimits, ScaleSignals } from './autoscaler.ts';

const limits: ScaleLimits = {
  minReplicas: 1,
  maxReplicas: 10,
  readyTimeMs: 120_000,
  tickMs: 5_000,
  headroom: 1.2,
  scaleInWindowMs: 300_000,
};

const signals = (o: Partial<ScaleSignals> = {}): ScaleSignals => ({
  nowMs: 0,
  ready: 2,
  starting: 0,
  draining: 0,
  arrivalRps: 10,
  goodRps: 10,
  missedRps: 0,
  queued: 0,
  engineWaiting: 0,
  running: 20,
  kvUsage: 0.3,
  utilization: 0.5,
  fresh: true,
  model: { rps: 5, streams: 20 },
  ...o,
});

for (const [type, a] of Object.entries(AUTOSCALERS)) {
  test(`${type}: stays within the limits and is deterministic`, () => {
    const s1 = a.initState();
    const s2 = a.initState();
    for (let k = 0; k < 200; k++) {
      const sig = signals({
        nowMs: k * 5_000,
        ready: 1 + (k % 9),
        arrivalRps: (k * 37) % 100,
        goodRps: (k * 13) % 60,
        queued: (k * 7) % 40,
        engineWaiting: (k * 3) % 30,
        utilization: ((k * 11) % 100) / 100,
        running: (k * 17) % 300,
      });
      const d = a.decide(s1, sig, limits);
      assert.ok(
        d.desired >= limits.minReplicas && d.desired <= limits.maxReplicas,
        String(d.desired),
      );
      assert.deepEqual(a.decide(s2, sig, limits), d);
    }
  });
  test(`${type}: explains itself in one line`, () => {
    assert.ok(a.description.length > 0 && !a.description.includes('\n'));
  });
}

test('goodput: scales out ahead of a rising load by the ready time, on the model capacity', () => {
  const a = AUTOSCALERS.goodput;
  const st = a.initState();
  let d = a.decide(st, signals({ arrivalRps: 10 }), limits);
  // 1.2 × 10 / 5 = 2.4 → 3, and one in reserve.
  assert.equal(d.desired, 4);
  // Arrivals rising by 2 req/s every tick: the forecast runs 24 ticks ahead.
  for (let k = 1; k <= 5; k++) {
    d = a.decide(st, signals({ nowMs: k * 5_000, ready: 4, arrivalRps: 10 + 2 * k }), limits);
  }
  assert.ok(d.desired > Math.ceil((1.2 * 20) / 5) + 1, `desired ${d.desired}`);
});

test('goodput: scale-in waits out the window, one group at a time, and never on stale figures', () => {
  const a = AUTOSCALERS.goodput;
  const st = a.initState();
  a.decide(st, signals({ ready: 8, arrivalRps: 30, goodRps: 30 }), limits);
  const quiet = (t: number, fresh = true) =>
    a.decide(st, signals({ nowMs: t, ready: 8, arrivalRps: 2, goodRps: 2, fresh }), limits);
  assert.equal(quiet(30_000).desired, 8, 'inside the window');
  assert.equal(quiet(335_000, false).reason, 'stale');
  const after = quiet(340_000);
  assert.equal(after.desired, 7);
  assert.equal(after.reason, 'scale_in');
});

test('goodput: at the floor, a quiet fleet holds: no scale-in said where none is made', () => {
  const a = AUTOSCALERS.goodput;
  const st = a.initState();
  const quiet = (t: number) =>
    a.decide(st, signals({ nowMs: t, ready: 1, arrivalRps: 0.1, goodRps: 0.1 }), limits);
  quiet(0);
  const after = quiet(340_000);
  assert.deepEqual(after, { desired: 1, reason: 'floor' });
});

test('goodput: before anything has completed to size a group by, a fleet refusing its load still grows', () => {
  const a = AUTOSCALERS.goodput;
  const cold = { model: undefined, goodRps: 0, ready: 1 };
  // Quiet, it holds; refusing a tenth of its arrivals, a group more a tick.
  assert.deepEqual(a.decide(a.initState(), signals({ ...cold, arrivalRps: 2 }), limits), {
    desired: 1,
    reason: 'hold',
  });
  const st = a.initState();
  const refusing = signals({ ...cold, arrivalRps: 2, missedRps: 0.2 });
  assert.deepEqual(a.decide(st, refusing, limits), { desired: 2, reason: 'queue' });
  const queued = signals({ ...cold, ready: 2, arrivalRps: 2, queued: 9 });
  assert.deepEqual(a.decide(st, queued, limits), { desired: 3, reason: 'queue' });
});

test('goodput: sized for the headroom over the forecast', () => {
  const a = AUTOSCALERS.goodput;
  const at = (headroom: number) =>
    a.decide(a.initState(), signals({ ready: 4, arrivalRps: 10 }), { ...limits, headroom }).desired;
  // ceil(h × 10 / 5), and one in reserve (4 ready already).
  assert.equal(at(1.2), 4);
  assert.equal(at(2), 5);
  assert.equal(at(3), 7);
});

test('goodput: a fleet missing at its load corrects the model capacity down', () => {
  const a = AUTOSCALERS.goodput;
  const st = a.initState();
  // Five groups take 10 req/s and serve 7.5 within SLO, missing 2.5: 1.5 a group, not the
  // model's 5.
  const d = a.decide(
    st,
    signals({ ready: 5, arrivalRps: 10, goodRps: 7.5, missedRps: 2.5 }),
    limits,
  );
  // ceil(1.2 × 10 / 1.5) = 8, and one in reserve.
  assert.equal(d.desired, 9);
  // A fleet missing a few in a thousand is not at capacity: nothing learned.
  const calm = a.initState();
  assert.equal(
    a.decide(calm, signals({ arrivalRps: 10, goodRps: 10, missedRps: 0.01 }), limits).desired,
    4,
  );
});

test('goodput: no ready group drained while the streams in flight would not fit the rest', () => {
  const a = AUTOSCALERS.goodput;
  const st = a.initState();
  a.decide(st, signals({ ready: 3, arrivalRps: 0, goodRps: 0 }), limits);
  // No arrivals for the window, but 50 streams still run: 2 groups hold 40.
  const busy = (t: number) =>
    a.decide(st, signals({ nowMs: t, ready: 3, arrivalRps: 0, goodRps: 0, running: 50 }), limits);
  assert.equal(busy(320_000).reason, 'n_minus_1');
  assert.equal(busy(320_000).desired, 3);
  const idle = a.decide(
    st,
    signals({ nowMs: 325_000, ready: 3, arrivalRps: 0, goodRps: 0, running: 30 }),
    limits,
  );
  assert.deepEqual(idle, { desired: 2, reason: 'scale_in' });
});

test('hpa-utilization: 70% target on a 15 s late metric, decisions every 15 s', () => {
  const a = AUTOSCALERS['hpa-utilization'];
  const st = a.initState();
  assert.equal(a.decide(st, signals({ ready: 2, utilization: 1 }), limits).desired, 3);
  // 5 s later the same decision stands (15 s sync period).
  assert.equal(
    a.decide(st, signals({ nowMs: 5_000, ready: 2, utilization: 0 }), limits).desired,
    3,
  );
});
