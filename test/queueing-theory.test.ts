// The engine and event loop reproduce queueing theory: with a constant-time step and one
// sequence at a time, a replica is an M/D/1 (fixed outputs) or M/G/1 (exponential outputs)
// server, and mean queueing delay must match the closed forms within 3%. Little's law must
// hold on every run, measured from the fleet's occupancy against the requests' latencies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { run } from './helpers.ts';

const STEP_MS = 10;
const base = {
  profile: `const:step_ms=${STEP_MS}`,
  maxNumSeqs: 1,
  input: 'fixed:16',
  arrival: 'poisson' as const,
};

function within(actual: number, expected: number, tolerance: number, what: string) {
  const err = Math.abs(actual - expected) / expected;
  assert.ok(
    err <= tolerance,
    `${what}: simulated ${actual.toFixed(3)} vs theory ${expected.toFixed(3)} (${(err * 100).toFixed(2)}% off)`,
  );
}

test('M/D/1: mean queueing delay matches ρS / 2(1 − ρ)', () => {
  const outputTokens = 10;
  const serviceMs = outputTokens * STEP_MS; // one prefill step emitting the first token, then 9 decode steps
  for (const rate of [4, 7]) {
    const rho = (rate * serviceMs) / 1000;
    const report = run({
      ...base,
      output: `fixed:${outputTokens}`,
      rate,
      numRequests: 100_000,
      seed: 7,
    });
    const theory = (rho * serviceMs) / (2 * (1 - rho));
    within(report.latency_ms.ttft_parts.queue.mean, theory, 0.03, `M/D/1 ρ=${rho}`);
    assert.equal(report.completed, 100_000);
  }
});

test('M/G/1: mean queueing delay matches Pollaczek–Khinchine λE[S²] / 2(1 − ρ)', () => {
  const meanTokens = 8;
  // Output tokens K = max(1, round(X)), X ~ Exp(mean); service S = K · step.
  let es = 0;
  let es2 = 0;
  for (let k = 1; k < 2000; k++) {
    const lo = k === 1 ? 0 : k - 0.5;
    const p = Math.exp(-lo / meanTokens) - Math.exp(-(k + 0.5) / meanTokens);
    es += p * k * STEP_MS;
    es2 += p * (k * STEP_MS) ** 2;
  }
  const rate = 6;
  const lambda = rate / 1000;
  const rho = lambda * es;
  const report = run({
    ...base,
    output: `exp:${meanTokens}`,
    rate,
    numRequests: 150_000,
    seed: 11,
  });
  within(
    report.latency_ms.ttft_parts.queue.mean,
    (lambda * es2) / (2 * (1 - rho)),
    0.03,
    `M/G/1 ρ=${rho.toFixed(3)}`,
  );
});

test("Little's law holds: time-average occupancy = arrival rate × mean time in system", () => {
  const cases = [
    { ...base, output: 'fixed:10', rate: 5, numRequests: 5_000 },
    {
      profile: undefined,
      input: 'sharegpt-sarathi',
      output: 'sharegpt-sarathi',
      rate: 30,
      numRequests: 3_000,
      replicas: 2,
    },
    {
      profile: undefined,
      arrival: 'gamma' as const,
      burstiness: 0.3,
      rate: 40,
      numRequests: 3_000,
      replicas: 3,
      maxNumSeqs: 32,
    },
  ];
  for (const spec of cases) {
    const r = run(spec);
    assert.equal(r.completed, r.offered.requests);
    const lambda = r.offered.requests / r.duration_s;
    const w = r.latency_ms.e2el.mean / 1000;
    within(
      r.fleet.mean_requests_in_system,
      lambda * w,
      1e-3,
      `Little's law (${JSON.stringify(spec)})`,
    );
  }
});
