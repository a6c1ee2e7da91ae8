// The lag shedder on scripted time: a tick that fires late is lag; the smoothed lag above the
// threshold sheds, and it stops once ticks come on time again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Timers } from '../../core/ports/timers.ts';
import { LagShedder } from './lag-shedder.ts';

/** Timers whose callbacks run when the test says, on a clock the test moves. */
function scripted() {
  let now = 0;
  let pending: { atMs: number; fn: () => void } | undefined;
  const timers: Timers = {
    at(atMs, fn) {
      pending = { atMs, fn };
      return { cancel: () => (pending = undefined) };
    },
  };
  /** The next tick fires `lateMs` after it was due. */
  const fire = (lateMs: number) => {
    const p = pending;
    assert.ok(p, 'a tick is set');
    now = p.atMs + lateMs;
    pending = undefined;
    p.fn();
  };
  /** Time passes and the tick has not fired (the loop is busy elsewhere). */
  const stall = (ms: number) => (now += ms);
  return { clock: { now: () => now }, timers, fire, stall, pending: () => pending };
}

test('late ticks raise the lag past the threshold; on-time ticks bring it back', () => {
  const t = scripted();
  const s = new LagShedder(t.clock, t.timers, 20);
  assert.equal(s.shedding, false);
  t.fire(100);
  assert.equal(s.lagMs, 25, 'a quarter of the first late sample');
  assert.equal(s.shedding, true);
  for (let i = 0; i < 6; i++) t.fire(0);
  assert.ok(s.lagMs < 20, `${s.lagMs}`);
  assert.equal(s.shedding, false);
});

test('a single short pause does not shed; a sustained lag does', () => {
  const t = scripted();
  const s = new LagShedder(t.clock, t.timers, 20);
  t.fire(30); // one 30 ms pause (a collection): 7.5
  assert.equal(s.shedding, false);
  for (let i = 0; i < 5; i++) t.fire(30);
  assert.equal(s.shedding, true, `sustained: ${s.lagMs}`);
});

test('threshold 0 never sheds and sets no tick; stop cancels the tick', () => {
  const off = scripted();
  const never = new LagShedder(off.clock, off.timers, 0);
  assert.equal(off.pending(), undefined);
  assert.equal(never.shedding, false);
  const on = scripted();
  new LagShedder(on.clock, on.timers, 20).stop();
  assert.equal(on.pending(), undefined);
});

test('a tick overdue enough to shed when it fires sheds already: a loop stuck in I/O is seen', () => {
  const t = scripted();
  const s = new LagShedder(t.clock, t.timers, 20);
  // The tick is due at 10; with no lag yet it sheds once overdue by 80 (20 / 0.25).
  t.stall(10 + 80);
  assert.equal(s.shedding, false, 'overdue by exactly 80');
  t.stall(1);
  assert.equal(s.shedding, true, 'overdue by 81: the tick will bring the lag past 20');
  t.fire(81);
  assert.equal(s.shedding, true);
  // With 10 of lag already, (20 − 7.5) / 0.25 = 50 overdue is the line.
  const u = scripted();
  const v = new LagShedder(u.clock, u.timers, 20);
  u.fire(40); // lag 10
  assert.equal(v.lagMs, 10);
  u.stall(10 + 50);
  assert.equal(v.shedding, false);
  u.stall(1);
  assert.equal(v.shedding, true);
});

test('while streams with a gap objective run, a sustained lag past its share of the tightest sheds', () => {
  const t = scripted();
  let tightest = Infinity;
  const s = new LagShedder(t.clock, t.timers, 50, { ratio: 0.15, tightestGapMs: () => tightest });
  // A steady 20 ms lag for two seconds of arrivals: under 50, and no stream to guard.
  for (let i = 0; i < 70; i++) {
    t.fire(20);
    assert.equal(s.shedding, false, `no streams: ${s.lagMs}`);
  }
  assert.equal(s.guardMs, Infinity);
  assert.ok(s.sustainedLagMs > 15, `${s.sustainedLagMs}`);
  // Streams whose p99 gap must stay within 80 ms: 12 ms of sustained lag at most.
  tightest = 80;
  t.fire(20);
  assert.equal(s.guardMs, 12);
  assert.equal(s.shedding, true);
  // Only loose objectives left: the threshold alone again.
  tightest = 1_000;
  t.fire(20);
  assert.equal(s.shedding, false);
});

test('the gap guard forgives a moment late; a loop that stays late it does not', () => {
  const t = scripted();
  const s = new LagShedder(t.clock, t.timers, 50, { ratio: 0.15, tightestGapMs: () => 80 });
  for (let i = 0; i < 50; i++) t.fire(0);
  t.fire(40); // one turn 40 ms late (a burst of arrivals): the fast lag 10, the sustained ~2
  assert.equal(s.shedding, false, `one late turn: ${s.sustainedLagMs}`);
  for (let i = 0; i < 20; i++) t.fire(0);
  for (let i = 0; i < 40; i++) t.fire(25); // a second of turns 25 ms late
  assert.equal(s.shedding, true, `sustained: ${s.sustainedLagMs}`);
  // Ratio 0: the threshold alone.
  const off = scripted();
  const plain = new LagShedder(off.clock, off.timers, 50, { ratio: 0, tightestGapMs: () => 80 });
  for (let i = 0; i < 40; i++) {
    off.fire(25);
    assert.equal(plain.shedding, false);
  }
  assert.equal(plain.guardMs, Infinity);
});

test('with no request asking and no stream to guard for a second, the tick rests; the next request wakes it', () => {
  const t = scripted();
  let tightest = Infinity;
  const s = new LagShedder(t.clock, t.timers, 50, { ratio: 0.15, tightestGapMs: () => tightest });
  // Running streams with a gap objective keep it ticking, asked or not.
  tightest = 80;
  for (let i = 0; i < 200; i++) t.fire(5);
  assert.ok(t.pending(), 'guarding streams: still ticking after 3 s');
  // Streams gone, no request: a second of ticks, then none.
  tightest = Infinity;
  for (let i = 0; i < 100 && t.pending() !== undefined; i++) t.fire(5);
  assert.equal(t.pending(), undefined, 'rested');
  assert.equal(s.lagMs, 0, 'an idle loop is not late');
  // Idle for a minute: nothing fires. The next request is not shed and sets the tick again.
  t.stall(60_000);
  assert.equal(s.shedding, false);
  assert.equal(t.pending()?.atMs, t.clock.now() + 10);
  // Awake, it judges lag as before.
  for (let i = 0; i < 8; i++) t.fire(100);
  assert.equal(s.shedding, true, `${s.lagMs}`);
  // Requests asking between ticks keep it awake with no streams at all.
  const u = scripted();
  const asked = new LagShedder(u.clock, u.timers, 50);
  for (let i = 0; i < 300; i++) {
    u.fire(0);
    assert.equal(asked.shedding, false);
  }
  assert.ok(u.pending(), 'asked every tick: still ticking after 3 s');
});

test('a loop that keeps time is ticked every 50 ms; a late tick sets 10 ms again', () => {
  const t = scripted();
  const s = new LagShedder(t.clock, t.timers, 50);
  t.fire(0);
  assert.equal(t.pending()?.atMs, t.clock.now() + 50, 'on time: the calm period');
  assert.equal(s.shedding, false);
  t.fire(40); // 40 ms late: the smoothed lag 10
  assert.equal(t.pending()?.atMs, t.clock.now() + 10, 'late: the short period');
  for (let i = 0; i < 6; i++) {
    t.fire(0);
    assert.equal(s.shedding, false);
  }
  assert.ok(s.lagMs < 5, `${s.lagMs}`);
  assert.equal(t.pending()?.atMs, t.clock.now() + 50, 'on time again: calm');
  // A flood holding the loop is seen by how overdue the calm tick is, as with the short one.
  const line = (50 - 0.75 * s.lagMs) / 0.25;
  t.stall(50 + Math.floor(line));
  assert.equal(s.shedding, false, `overdue by ${Math.floor(line)}`);
  t.stall(1);
  assert.equal(s.shedding, true);
});
