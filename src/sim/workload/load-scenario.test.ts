// The diurnal-burst load shape: requests and their order unchanged, re-timed so the rate
// follows the diurnal ramp and triples in the burst; a bad name is refused naming the option.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LlmRequest } from '../../core/request/request.ts';
import { ConfigError } from '../../core/errors.ts';
import {
  burstStartMs,
  diurnalBurstRate,
  parseLoadScenario,
  withLoadScenario,
} from './load-scenario.ts';

const HOUR = 3_600_000;
// One request a second for an hour.
const steady: LlmRequest[] = Array.from({ length: 3_600 }, (_, i) => ({
  id: `r${i}`,
  arrivalMs: i * 1000,
  inputTokens: 10,
  outputTokens: 10,
  tenant: 't',
  sloClass: 'interactive',
}));

test('the rate ramps from half to 1.5× and back, and triples in the burst', () => {
  assert.ok(Math.abs(diurnalBurstRate(0, HOUR) - 0.5) < 1e-9);
  assert.ok(Math.abs(diurnalBurstRate(HOUR / 4, HOUR) - 1) < 1e-9);
  // Mid-way the ramp is at 1.5× (the burst, 45–85% of an hour's span, aside).
  assert.ok(Math.abs(diurnalBurstRate(HOUR / 2, HOUR) / 3 - 1.5) < 1e-9);
  assert.ok(Math.abs(diurnalBurstRate(HOUR, HOUR) - 0.5) < 1e-9);
  const inBurst = diurnalBurstRate(0.45 * HOUR + 1, HOUR);
  const before = diurnalBurstRate(0.45 * HOUR - 1, HOUR);
  assert.ok(Math.abs(inBurst / before - 3) < 0.01);
});

test('re-timing keeps every request in order and compresses the burst', () => {
  const out = [...withLoadScenario(steady, HOUR)];
  assert.deepEqual(
    out.map((r) => r.id),
    steady.map((r) => r.id),
  );
  assert.ok(out.every((r, i) => i === 0 || r.arrivalMs >= out[i - 1].arrivalMs));
  const at = burstStartMs(HOUR);
  const window = (from: number, ms: number) =>
    out.filter((r) => r.arrivalMs >= from && r.arrivalMs < from + ms).length;
  // A minute into the burst arrives about three times what arrived a minute before it.
  const ratio = window(at + 60_000, 60_000) / window(at - 120_000, 60_000);
  assert.ok(ratio > 2.5 && ratio < 3.5, String(ratio));
});

test('an unknown shape names the option', () => {
  assert.throws(
    () => parseLoadScenario('lunch-rush'),
    (e) => e instanceof ConfigError && /--scenario/.test(e.message),
  );
});
