import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isConfigError, isInputError } from '../../core/errors.ts';
import { SeededRng } from '../../runtime/seeded-rng.ts';
import { buildWorkload } from './build-workload.ts';
import { fixture } from './trace/test-fixtures.ts';
import type { WorkloadOptions } from './workload-options.ts';

const rng = (): SeededRng => new SeededRng(7);

test('defaults: 1000 Poisson requests at 10/s with joint ShareGPT lengths', () => {
  const w = buildWorkload({}, rng());
  assert.deepEqual(w.describe, {
    kind: 'synthetic',
    arrival: 'poisson',
    rateRps: 10,
    burstiness: 1,
    numRequests: 1000,
    durationS: 100,
    input: 'sharegpt-sarathi',
    output: 'sharegpt-sarathi',
    jointLengths: true,
    tenants: 'default',
    classes: 'interactive',
  });
  const rs = [...w.requests];
  assert.equal(rs.length, 1000);
  assert.ok(rs.every((r) => r.tenant === 'default' && r.sloClass === 'interactive'));
});

test('gamma arrivals, rate scale and specs are described as used', () => {
  const w = buildWorkload(
    {
      arrival: 'gamma',
      rate: 4,
      burstiness: 0.5,
      rateScale: 2,
      numRequests: 80,
      input: 'fixed:100',
      output: 'uniform:1:9',
      tenants: 'zipf:3:1',
      classes: 'interactive:3,batch:1',
    },
    rng(),
  );
  assert.deepEqual(w.describe, {
    kind: 'synthetic',
    arrival: 'gamma',
    rateRps: 8,
    burstiness: 0.5,
    numRequests: 80,
    durationS: 10,
    input: 'fixed:100',
    output: 'uniform:1:9',
    jointLengths: false,
    tenants: 'zipf:3:1',
    classes: 'interactive:0.75,batch:0.25',
  });
  const rs = [...w.requests];
  assert.ok(Math.abs(rs[79].arrivalMs - 10_000) < 1e-6);
});

test('burstiness alone implies gamma; with poisson it is a ConfigError', () => {
  assert.equal(buildWorkload({ burstiness: 0.5 }, rng()).describe.kind, 'synthetic');
  assert.equal(
    (buildWorkload({ burstiness: 0.5 }, rng()).describe as { arrival: string }).arrival,
    'gamma',
  );
  assert.throws(
    () => buildWorkload({ arrival: 'poisson', burstiness: 0.5 }, rng()),
    (e) => isConfigError(e) && e.path === '--burstiness',
  );
  assert.doesNotThrow(() => buildWorkload({ arrival: 'poisson', burstiness: 1 }, rng()));
});

const badOptions: [WorkloadOptions, string][] = [
  [{ rate: 0 }, '--rate'],
  [{ rate: -2 }, '--rate'],
  [{ rate: NaN }, '--rate'],
  [{ arrival: 'gamma', burstiness: 0 }, '--burstiness'],
  [{ numRequests: 0 }, '--num-requests'],
  [{ numRequests: 2.5 }, '--num-requests'],
  [{ rateScale: 0 }, '--rate-scale'],
  [{ rateScale: Infinity }, '--rate-scale'],
  [{ arrival: 'uniform' as 'gamma' }, '--arrival'],
  [{ input: 'fixed:0' }, '--input'],
  [{ input: 'exp:1e12' }, '--input'],
  [{ output: 'fixed:16777217' }, '--output'],
  [{ output: 'lognormal:3' }, '--output'],
  [{ tenants: 'zipf:0:1' }, '--tenants'],
  [{ classes: 'gold' }, '--classes'],
  [{ durationS: 60 }, '--duration'],
  [{ startS: 5 }, '--start'],
  [{ traceFormat: 'azure' }, '--trace-format'],
  [{ trace: fixture('azure-conv-200.csv'), traceFormat: 'csv' }, '--trace-format'],
  [{ trace: fixture('azure-conv-200.csv'), startS: -1 }, '--start'],
  [{ trace: fixture('azure-conv-200.csv'), durationS: 0 }, '--duration'],
  [{ trace: fixture('azure-conv-200.csv'), startS: 100 }, '--start'],
  [{ trace: fixture('azure-conv-200.csv'), classes: 'interactive:0' }, '--classes'],
  [{ trace: fixture('missing.csv') }, '--trace'],
  [{ choices: 0 }, '--n'],
  [{ choices: 129 }, '--n'],
  [{ choices: 2.5 }, '--n'],
];

for (const [opts, path] of badOptions) {
  test(`ConfigError on ${path} for ${JSON.stringify(opts).replace(/"trace":"[^"]*",?/, '')}`, () => {
    assert.throws(
      () => buildWorkload(opts, rng()),
      (e) => isConfigError(e) && e.path === path,
    );
  });
}

test('a trace with a window and a rate scale, described for the report', () => {
  const file = fixture('azure-conv-200.csv');
  const w = buildWorkload({ trace: file, startS: 5, durationS: 50, rateScale: 2 }, rng());
  const rs = [...w.requests];
  const d = w.describe;
  assert.equal(d.kind, 'trace');
  if (d.kind !== 'trace') return;
  assert.equal(d.file, file);
  assert.equal(d.format, 'azure');
  assert.equal(d.formatDetected, true);
  assert.equal(d.rowsRead, 200);
  assert.deepEqual(d.rowsSkipped, {});
  assert.equal(d.rowsReordered, 0);
  assert.ok(Math.abs(d.traceSpanS - 61.263537) < 1e-9);
  assert.deepEqual(d.window, { startS: 5, durationS: 50 });
  assert.equal(d.rateScale, 2);
  assert.equal(d.numRequests, rs.length);
  assert.ok(rs.length > 0 && rs.length < 200);
  assert.equal(d.firstArrivalMs, rs[0].arrivalMs);
  assert.equal(d.lastArrivalMs, rs.at(-1)!.arrivalMs);
  assert.ok(d.firstArrivalMs >= 0 && d.lastArrivalMs < 25_000);
  assert.equal(
    d.inputTokens,
    rs.reduce((s, r) => s + r.inputTokens, 0),
  );
  assert.equal(
    d.outputTokens,
    rs.reduce((s, r) => s + r.outputTokens, 0),
  );
});

test('a trace re-timed by gamma arrivals: its requests in order, at its own mean rate, burstier', () => {
  const file = fixture('azure-conv-200.csv');
  const opts = { trace: file, durationS: 50, rateScale: 2 };
  const recorded = buildWorkload(opts, rng());
  const retimed = buildWorkload({ ...opts, arrival: 'gamma', burstiness: 0.2 }, rng());
  const a = [...recorded.requests];
  const b = [...retimed.requests];
  assert.equal(b.length, a.length);
  // The same requests, sizes and order; only the times differ.
  const withoutTime = (rs: typeof a) => rs.map(({ arrivalMs: _t, ...r }) => r);
  assert.deepEqual(withoutTime(b), withoutTime(a));
  assert.notDeepEqual(
    b.map((r) => r.arrivalMs),
    a.map((r) => r.arrivalMs),
  );
  for (let i = 1; i < b.length; i++) assert.ok(b[i].arrivalMs >= b[i - 1].arrivalMs);
  // The same span: the last arrival lands where the scaled window's last one does.
  assert.ok(Math.abs(b.at(-1)!.arrivalMs - a.at(-1)!.arrivalMs) < 1e-6);
  // Burstier: the gaps vary far more than the recorded (near-Poisson) ones.
  const cv = (rs: typeof a) => {
    const gaps = rs.slice(1).map((r, i) => r.arrivalMs - rs[i].arrivalMs);
    const mean = gaps.reduce((x, y) => x + y, 0) / gaps.length;
    const sd = Math.sqrt(gaps.reduce((x, g) => x + (g - mean) ** 2, 0) / gaps.length);
    return sd / mean;
  };
  assert.ok(cv(b) > 1.5 * cv(a), `gap CV ${cv(b)} against ${cv(a)}`);
  const d = retimed.describe;
  assert.ok(d.kind === 'trace' && recorded.describe.kind === 'trace');
  if (d.kind !== 'trace') return;
  assert.deepEqual(d.retimed, { arrival: 'gamma', burstiness: 0.2 });
  assert.equal(d.firstArrivalMs, b[0].arrivalMs);
  assert.equal(d.lastArrivalMs, b.at(-1)!.arrivalMs);
  assert.equal(recorded.describe.kind === 'trace' && recorded.describe.retimed, null);
  // Deterministic: the same seed re-times the same way.
  assert.deepEqual(
    [...buildWorkload({ ...opts, arrival: 'gamma', burstiness: 0.2 }, rng()).requests],
    b,
  );
});

test('a trace ignores the synthetic options its caller filled with defaults', () => {
  const file = fixture('burstgpt.csv');
  const plain = buildWorkload({ trace: file }, rng());
  const filled = buildWorkload(
    {
      trace: file,
      arrival: 'poisson',
      rate: 10,
      burstiness: 1,
      numRequests: 1,
      input: 'x',
      output: 'y',
    },
    rng(),
  );
  assert.deepEqual(filled.describe, plain.describe);
  assert.deepEqual([...filled.requests], [...plain.requests]);
  assert.deepEqual(plain.describe.kind === 'trace' && plain.describe.rowsSkipped, { failed: 1 });
});

test('traceFormat overrides detection; jsonl names the native format', () => {
  const w = buildWorkload({ trace: fixture('native.jsonl'), traceFormat: 'jsonl' }, rng());
  assert.equal(w.describe.kind === 'trace' && w.describe.format, 'native');
  assert.equal(w.describe.kind === 'trace' && w.describe.formatDetected, false);
  assert.throws(
    () => buildWorkload({ trace: fixture('native.jsonl'), traceFormat: 'azure' }, rng()),
    (e) => isInputError(e) && e.line === 1 && e.field === 'TIMESTAMP',
  );
});

test('a malformed trace fails when the workload is built, not while it runs', () => {
  assert.throws(
    () => buildWorkload({ trace: fixture('native-unknown-class.jsonl') }, rng()),
    (e) => isInputError(e) && e.line === 2 && e.field === 'class',
  );
});

test('the same options and seed give the same requests and description', () => {
  const opts: WorkloadOptions = {
    trace: fixture('mooncake.jsonl'),
    tenants: 'zipf:4:1',
    classes: 'batch:1,interactive:1',
  };
  const a = buildWorkload(opts, new SeededRng(5));
  const b = buildWorkload(opts, new SeededRng(5));
  assert.equal(JSON.stringify(a.describe), JSON.stringify(b.describe));
  assert.deepEqual([...a.requests], [...b.requests]);
});

test('choices: every request, synthetic or from a trace, asks for n; one leaves the stream as it is', () => {
  for (const base of [{ numRequests: 20 }, { trace: fixture('mooncake.jsonl') }]) {
    const one = buildWorkload(base, rng());
    const four = buildWorkload({ ...base, choices: 4 }, rng());
    assert.deepEqual(four.describe, { ...one.describe, choices: 4 });
    assert.deepEqual(
      [...four.requests],
      [...one.requests].map((r) => ({ ...r, choices: 4 })),
    );
    const once = buildWorkload({ ...base, choices: 1 }, rng());
    assert.deepEqual(once.describe, one.describe);
    assert.deepEqual([...once.requests], [...one.requests]);
  }
});
