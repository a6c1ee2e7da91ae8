import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StreamMeter } from './stream-meter.ts';
import { DEFAULT_SLO_CLASSES } from '../core/request/slo-classes.ts';
import { firstMiss } from '../core/observe/slo-judge.ts';
import { tpotMs } from '../core/observe/request-outcome.ts';
import { request } from '../core/admission/admission-test-kit.ts';

/** A clock the test moves. */
function manualClock() {
  let now = 0;
  return { clock: { now: () => now }, at: (ms: number) => void (now = ms) };
}

test('a later token’s gap is timed when it was sent, and tokens sent together are 0 ms apart', () => {
  const { clock, at } = manualClock();
  const meter = new StreamMeter(clock, 0, 16);
  at(100);
  assert.equal(meter.arrived(), true, 'the first token');
  assert.equal(meter.firstTokenMs, 100, 'the first token is timed on arrival: its TTFT');
  assert.equal(meter.unsent(), false);
  at(120);
  assert.equal(meter.arrived(), false);
  assert.equal(meter.unsent(), true);
  // The turn that holds it runs on: it leaves at 190, not at 120.
  const gaps: number[] = [];
  assert.equal(
    meter.sent(190, (g) => gaps.push(g)),
    90,
  );
  assert.equal(meter.unsent(), false);
  assert.equal(
    meter.sent(200, (g) => gaps.push(g)),
    undefined,
    'nothing unsent: nothing timed',
  );
  // Two tokens arrive in one turn and go out in one write.
  at(210);
  meter.arrived();
  at(215);
  meter.arrived();
  meter.sent(220, (g) => gaps.push(g));
  assert.deepEqual(gaps, [90, 30, 0]);
  assert.deepEqual([meter.tokens, meter.lastTokenMs], [4, 220]);
  // The longest a token waited between its arrival and its write: the held turn's 70 ms (the
  // two sent together waited 10 and 5).
  assert.equal(meter.relayMaxMs, 70);
});

test('a stream judged on the gaps it was sent with: a late turn breaks the gap objective', () => {
  const cls = DEFAULT_SLO_CLASSES.interactive; // p99 gap ≤ 80 ms
  const { clock, at } = manualClock();
  const judged = (lateMs: number) => {
    const meter = new StreamMeter(clock, 0, 64);
    at(50);
    meter.arrived();
    // Tokens arrive every 20 ms; one turn, at the 16th, runs `lateMs` long before its writes
    // go out, and every later write follows it.
    for (let i = 1; i < 32; i++) {
      at(50 + 20 * i);
      meter.arrived();
      meter.sent(50 + 20 * i + (i >= 16 ? lateMs : 0));
    }
    const o = meter.outcome(request(), 'completed', meter.tokens);
    return firstMiss(o, cls.objectives);
  };
  // Of 31 gaps numpy's p99 is 0.3 × the second largest + 0.7 × the largest: 20 + 0.7 × late.
  assert.equal(judged(0), null, '20 ms gaps on time: good');
  assert.equal(judged(70), null, 'one turn 70 ms late: p99 69 ms');
  assert.equal(judged(100), 'itl', 'one turn 100 ms late: p99 90 ms, over 80');
});

test('several choices: each choice its own gaps, its first token none, the end the last token sent', () => {
  const { clock, at } = manualClock();
  const meter = new StreamMeter(clock, 0, 4);
  // A step every 50 ms puts a token of each of three choices out together.
  const gaps: number[] = [];
  for (let step = 0; step < 4; step++) {
    at(100 + 50 * step);
    for (let c = 0; c < 3; c++) {
      if (meter.arrived(c)) continue;
      meter.sent(100 + 50 * step + 1, (g) => gaps.push(g), c);
    }
  }
  // Each choice's first token is no gap (the request's first is its TTFT, out on arrival at 100,
  // so the first choice's next gap is 51 ms); the rest are 50 ms, as each choice's client sees
  // its own stream: not the 0 ms between choices.
  assert.equal(meter.firstTokenMs, 100);
  assert.deepEqual(gaps.sort(), [50, 50, 50, 50, 50, 50, 50, 50, 51]);
  assert.deepEqual(meter.choiceTokens(), [4, 4, 4]);
  assert.equal(meter.tokens, 12);
  assert.equal(meter.lastTokenMs, 251);
  const o = meter.outcome(request({}), 'completed', 12);
  assert.equal(o.maxStallMs, 51);
  // Its TPOT is a choice's: 151 ms over the 3 tokens after the first, not over all 11.
  assert.equal(o.longestChoiceTokens, 4);
  assert.equal(tpotMs(o), 151 / 3);
  // Its p99 gap is the worst choice's own: the first's, of 51, 50 and 50 ms (numpy's linear
  // rule), not the p99 of all nine gaps pooled.
  assert.ok(Math.abs((o.itlP99Ms ?? 0) - 50.98) < 1e-9, `p99 ${o.itlP99Ms}`);
});
