// The connection intake on scripted time and turns: connections are let in while the window has
// room, in arrival order as requests are seen; quiet ones go back in line; the window follows
// the turns it makes; a connection's wait in line is told to its first request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Timers } from '../../core/ports/timers.ts';
import { ConnectionIntake, lineLimitMs, type PausedConnection } from './connection-intake.ts';

class Conn implements PausedConnection {
  destroyed = false;
  reading = false;
  readonly name: string;
  #onClose: (() => void)[] = [];
  constructor(name: string) {
    this.name = name;
  }
  resume() {
    this.reading = true;
  }
  destroy() {
    this.destroyed = true;
  }
  once(_event: 'close', fn: () => void) {
    this.#onClose.push(fn);
  }
  /** The client closed it. */
  close() {
    this.destroyed = true;
    for (const fn of this.#onClose) fn();
  }
}

/** A clock the test moves, timers it fires, and turn ends it runs. */
function scripted(budgetMs = 12) {
  let now = 0;
  const timers: { atMs: number; fn: () => void }[] = [];
  const turnEnds: (() => void)[] = [];
  const t: Timers = {
    at(atMs, fn) {
      const e = { atMs, fn };
      timers.push(e);
      return { cancel: () => timers.splice(timers.indexOf(e), 1) };
    },
  };
  const intake = new ConnectionIntake(
    { now: () => now },
    t,
    () => budgetMs,
    (fn) => turnEnds.push(fn),
  );
  return {
    intake,
    /** Time passes; timers due by then fire. */
    advance(ms: number) {
      now += ms;
      for (const e of timers.filter((x) => x.atMs <= now)) {
        timers.splice(timers.indexOf(e), 1);
        e.fn();
      }
    },
    /** The turn ends `ms` after the last one: the turn ends set in it run. */
    turn(ms = 1) {
      now += ms;
      for (const fn of turnEnds.splice(0)) fn();
    },
  };
}

const conns = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => new Conn(`c${from + i}`));

test('lets connections in up to its window, then one per first request seen, oldest first', () => {
  const s = scripted();
  const window = s.intake.window;
  const cs = conns(window + 3);
  for (const c of cs) s.intake.take(c);
  assert.equal(cs.filter((c) => c.reading).length, window);
  assert.equal(s.intake.waiting, 3);
  // A second request on a connection already let in makes no room.
  s.intake.seen(cs[0]);
  s.intake.seen(cs[0]);
  assert.deepEqual(
    cs.slice(window).map((c) => c.reading),
    [true, false, false],
  );
  // A client that leaves makes room too.
  cs[1].close();
  assert.equal(cs[window + 1].reading, true);
  assert.equal(s.intake.waiting, 1);
});

test('tells a first request when its connection began to wait, and how late the line is', () => {
  const s = scripted();
  const cs = conns(s.intake.window + 1);
  for (const c of cs) s.intake.take(c);
  const last = cs[cs.length - 1];
  assert.equal(s.intake.lateMs, 0);
  s.advance(30);
  assert.equal(s.intake.lateMs, 30, 'the oldest waiting connection waited 30 ms');
  assert.equal(s.intake.seen(cs[0]), undefined, 'let in at once: it did not wait');
  assert.equal(s.intake.lateMs, 0, 'none waits');
  assert.equal(s.intake.seen(last), 0, 'accepted at 0, let in at 30');
});

test('a connection that sends nothing for 100 ms leaves the window to the next', () => {
  const s = scripted();
  const window = s.intake.window;
  const cs = conns(3 * window);
  for (const c of cs) s.intake.take(c);
  const [second, third] = [cs[window], cs[2 * window]];
  // Two turns end: the loop has polled the connections let in.
  s.turn();
  s.turn();
  s.advance(97);
  assert.equal(second.reading, false);
  s.advance(1);
  assert.equal(second.reading, true, 'the first window was quiet: the next is let in');
  assert.ok(cs[0].reading, 'still read: what it sends is one connection’s work');
  // Those let in waited for places held by connections that never sent: a place more for each.
  assert.equal(s.intake.window, 2 * window);
  assert.equal(third.reading, true);
  assert.equal(s.intake.waiting, 0);
  // A first request that waited in line is told since when; one that went quiet once let in is
  // not known to have waited (its client had a chance to send), and holds no place either.
  assert.equal(s.intake.seen(third), 0);
  assert.equal(s.intake.seen(second), 0);
  assert.equal(s.intake.seen(cs[0]), undefined);
});

test('in a turn longer than 100 ms, a connection let in is not quiet until the loop has polled it', () => {
  const s = scripted();
  const window = s.intake.window;
  const cs = conns(window + 1);
  s.advance(10);
  for (const c of cs) s.intake.take(c);
  const last = cs[window];
  // One long turn: the quiet timer fires before the poll that would read the window.
  s.advance(150);
  assert.equal(last.reading, false, 'the window was never polled: it is not quiet');
  s.turn();
  s.advance(10);
  assert.equal(last.reading, false, 'one turn end may come before the poll');
  // The next turn's poll read nothing from the window: now it is quiet.
  s.turn();
  s.advance(1);
  assert.equal(last.reading, true);
  assert.equal(s.intake.seen(last), 10, 'its wait in line counts from its accept');
});

test('the window doubles until a turn runs over budget, then halves and grows by an eighth', () => {
  const s = scripted(12);
  const first = s.intake.window;
  const cs = conns(8 * first);
  for (const c of cs) s.intake.take(c);
  s.turn();
  /** The next turn reads every connection let in, in `ms`. */
  const readAll = (ms: number) => {
    for (const c of cs.filter((x) => x.reading)) s.intake.seen(c);
    s.turn(ms);
  };
  readAll(5);
  assert.equal(s.intake.window, 2 * first, 'slow start: doubled within budget');
  readAll(40);
  assert.equal(s.intake.window, first, 'halved over budget');
  readAll(5);
  assert.equal(s.intake.window, first + first / 8, 'then an eighth at a time');
  // A long turn that read none was long for other reasons: the window stays.
  const kept = s.intake.window;
  s.turn(40);
  assert.equal(s.intake.window, kept);
});

test('after a quiet spell the next burst starts slow again', () => {
  const s = scripted(12);
  const first = s.intake.window;
  const cs = conns(2 * first);
  for (const c of cs) s.intake.take(c);
  s.turn();
  for (const c of cs.slice(0, first)) s.intake.seen(c);
  s.turn(40);
  assert.equal(s.intake.window, first / 2);
  for (const c of cs.slice(first)) s.intake.seen(c);
  s.turn(5);
  s.turn(5);
  s.turn(5);
  // Nothing read or waiting: the next burst doubles again.
  const next = conns(4 * first, 100);
  for (const c of next) s.intake.take(c);
  const w = s.intake.window;
  s.turn();
  for (const c of next.filter((x) => x.reading)) s.intake.seen(c);
  s.turn(5);
  assert.equal(s.intake.window, 2 * w);
});

test('connections that never send do not hold the door: a steady stream of them widens the window', () => {
  const s = scripted();
  let idle = 0;
  const real: { c: Conn; acceptedMs: number }[] = [];
  const waits: number[] = [];
  // 5 s of a slow-header attack, 250 connections a second that send nothing, and a client
  // whose request arrives with its connection every 300 ms, read at the first poll after it is
  // let in. Each millisecond is a turn of the loop.
  for (let t = 0; t < 5_000; t++) {
    if (t % 4 === 0) s.intake.take(new Conn(`idle${idle++}`));
    if (t % 300 === 0) {
      const c = new Conn(`real${t}`);
      real.push({ c, acceptedMs: t });
      s.intake.take(c);
    }
    for (const r of real.filter((x) => x.c.reading)) {
      s.intake.seen(r.c);
      waits.push(t - r.acceptedMs);
      real.splice(real.indexOf(r), 1);
    }
    s.turn(1);
    s.advance(0);
  }
  assert.equal(real.length, 0, 'every client was let in');
  assert.ok(s.intake.window > 16, `the window widened: ${s.intake.window}`);
  const late = waits.slice(4);
  assert.ok(Math.max(...late) <= 2, `after the first second, no client waits in line: ${waits}`);
});

test('a closed connection waiting in line is not let in; close() ends the line', () => {
  const s = scripted();
  const cs = conns(s.intake.window + 2);
  for (const c of cs) s.intake.take(c);
  const [gone, next] = cs.slice(-2);
  gone.close();
  s.intake.seen(cs[0]);
  assert.equal(gone.reading, false, 'passed over');
  assert.equal(next.reading, true, 'the slot goes to the next');
  const more = conns(3, 100);
  for (const c of more) s.intake.take(c);
  s.intake.close();
  assert.ok(more.every((c) => c.destroyed));
  assert.equal(s.intake.waiting, 0);
});

test('the line sheds past a quarter of the tightest first-token objective', () => {
  assert.equal(lineLimitMs(2_000), 500);
  assert.equal(lineLimitMs(400), 100);
  assert.equal(lineLimitMs(Infinity), 500, 'no class promises a first token: the default');
});
