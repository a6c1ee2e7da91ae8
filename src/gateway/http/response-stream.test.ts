import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { VirtualClock } from '../../runtime/virtual-clock.ts';
import { MemoryStore } from '../shared/memory-store.ts';
import { RESPONSE_MAX_BYTES, type Told } from '../shared/shared-store.ts';
import { StateMetrics } from '../state-metrics.ts';
import { POLL_MS, RunStream } from './response-stream.ts';
import { follow, type EventsOut } from './stream-readers.ts';

/** A client that keeps what it is sent; a slow one takes what it was sent only when told. */
class Client implements EventsOut {
  readonly events: string[] = [];
  ended = false;
  gone = false;
  readonly leaving = new Promise<void>(() => {});
  readonly slow: boolean;
  #take: (() => void) | undefined;
  constructor(slow = false) {
    this.slow = slow;
  }
  write(text: string): void {
    this.events.push(text);
  }
  async end(): Promise<void> {
    this.ended = true;
  }
  drained(): Promise<void> {
    return this.slow ? new Promise((resolve) => (this.#take = resolve)) : Promise.resolve();
  }
  /** A slow client takes what it was sent. */
  take(): void {
    this.#take?.();
  }
}

const event = (n: number, data = '') => `event: response.x\ndata: {"n":${n}${data}}\n\n`;

function setup(store = new MemoryStore({ clock: new VirtualClock() })) {
  const clock = new VirtualClock();
  const deps = {
    store,
    keepResponses: true,
    metrics: { state: new StateMetrics(new Registry()) },
    clock,
    timers: clock,
  };
  return { deps, clock, run: new RunStream(deps, deps, 'acme', 'resp_1') };
}

/** Lets the store's promises settle, the clock run on by `ms` in polls. */
async function settle(clock: VirtualClock, ms = 0): Promise<void> {
  for (let t = 0; t <= ms; t += POLL_MS) {
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    clock.run(clock.now() + POLL_MS);
  }
}

test("a run's readers get its events live, a late one its backlog from the log first", async () => {
  const { deps, clock, run } = setup();
  const early = new Client();
  const following = follow(deps, 'acme', 'resp_1', -1, run, early);
  run.emit(event(0) + event(1));
  await settle(clock);
  run.emit(event(2));
  const late = new Client();
  const joined = follow(deps, 'acme', 'resp_1', 0, run, late);
  run.emit(event(3));
  await run.end();
  await Promise.all([following, joined]);
  assert.deepEqual(
    early.events,
    [0, 1, 2, 3].map((n) => event(n)),
  );
  assert.deepEqual(
    late.events,
    [1, 2, 3].map((n) => event(n)),
    'after sequence number 0',
  );
  assert.equal(late.ended, true);
  // Ended, the log has them all, for a reader anywhere.
  assert.deepEqual(await deps.store.readEvents('acme', 'resp_1', 0, 10), early.events);
});

test('events the store refused are written with the next, in order', async () => {
  const store = new MemoryStore({ clock: new VirtualClock() });
  let down = true;
  const appended: number[] = [];
  const flaky = Object.assign(Object.create(store) as MemoryStore, {
    appendEvents: async (tenant: string, id: string, events: readonly string[]) => {
      if (down) throw new Error('unreachable');
      appended.push(events.length);
      return store.appendEvents(tenant, id, events);
    },
  });
  const { clock, run } = setup(flaky);
  run.emit(event(0));
  run.emit(event(1));
  await settle(clock);
  down = false;
  run.emit(event(2));
  await run.end();
  assert.deepEqual(
    await store.readEvents('acme', 'resp_1', 0, 10),
    [0, 1, 2].map((n) => event(n)),
  );
  assert.deepEqual(appended, [3], 'together, in one write');
});

test('events the store refused are written a second later, with no event after them', async () => {
  const store = new MemoryStore({ clock: new VirtualClock() });
  let down = true;
  const flaky = Object.assign(Object.create(store) as MemoryStore, {
    appendEvents: async (tenant: string, id: string, events: readonly string[]) => {
      if (down) throw new Error('unreachable');
      return store.appendEvents(tenant, id, events);
    },
  });
  const { clock, run } = setup(flaky);
  run.emit(event(0) + event(1));
  await settle(clock);
  down = false;
  assert.deepEqual(await store.readEvents('acme', 'resp_1', 0, 10), [], 'not yet');
  await settle(clock, 1_000);
  assert.deepEqual(
    await store.readEvents('acme', 'resp_1', 0, 10),
    [0, 1].map((n) => event(n)),
  );
  await run.end();
});

test('a log stops at its bound: a reader elsewhere gets what it holds, then an error that says so', async () => {
  const { deps, clock, run } = setup();
  const mib = 'x'.repeat(1024 * 1024);
  const live = new Client();
  const following = follow(deps, 'acme', 'resp_1', -1, run, live);
  const half = Math.floor(RESPONSE_MAX_BYTES / mib.length / 2);
  for (let n = 0; n < half; n++) run.emit(event(n, `,"pad":"${mib}"`));
  await settle(clock);
  for (let n = half; n < 3 * half; n++) run.emit(event(n, `,"pad":"${mib}"`));
  run.emit('event: response.completed\ndata: {}\n\n');
  await run.end();
  await following;
  assert.equal(live.events.length, 3 * half + 1, 'a reader where it runs gets every event');
  await deps.store.saveResponse(
    'acme',
    'resp_1',
    JSON.stringify({ response: { id: 'resp_1', status: 'completed', output: [] } }),
  );
  const elsewhere = new Client();
  const reading = follow(deps, 'acme', 'resp_1', -1, undefined, elsewhere);
  await settle(clock, 2_500);
  await reading;
  const logged = (await deps.store.readEvents('acme', 'resp_1', 0, 100)).length;
  assert.ok(logged >= half && logged < 2 * half, `${logged} events of ${half} MiB or more`);
  assert.deepEqual(elsewhere.events.slice(0, -1), live.events.slice(0, logged));
  assert.match(elsewhere.events.at(-1) ?? '', /^event: error\ndata: .*"code":"stream_incomplete"/);
  assert.match(elsewhere.events.at(-1) ?? '', new RegExp(`"sequence_number":${logged}\\}`));
});

test('a store failing mid-read ends the stream with an error that says where the client got to', async () => {
  const store = new MemoryStore({ clock: new VirtualClock() });
  await store.appendEvents(
    'acme',
    'resp_1',
    [0, 1, 2].map((n) => event(n)),
  );
  let reads = 0;
  const failing = Object.assign(Object.create(store) as MemoryStore, {
    readEvents: async (tenant: string, id: string, from: number, max: number) => {
      if (reads++ > 0) throw new Error('unreachable');
      return store.readEvents(tenant, id, from, max);
    },
  });
  const { deps, clock } = setup(failing);
  const client = new Client();
  const reading = follow(deps, 'acme', 'resp_1', 0, undefined, client);
  await settle(clock, POLL_MS);
  await reading;
  assert.deepEqual(
    client.events.slice(0, 2),
    [1, 2].map((n) => event(n)),
  );
  assert.match(client.events[2], /^event: error\n.*"code":"service_unavailable"/);
  assert.match(client.events[2], /"sequence_number":3\}/);
  assert.equal(client.ended, true);
});

test('a reader elsewhere is told the events as the log takes them, and reads the log for those it missed', async () => {
  const store = new MemoryStore({ clock: new VirtualClock() });
  let tell: Told = () => {};
  let reads = 0;
  const own: Partial<MemoryStore> = {
    watchEvents: async (_t: string, _id: string, told: Told) => {
      tell = told;
      return () => (tell = () => {});
    },
    readEvents: (t: string, id: string, from: number, max: number) => {
      reads++;
      return store.readEvents(t, id, from, max);
    },
  };
  // The rest is the store's own, bound to it (its fields are private).
  const watched = new Proxy(store, {
    get: (s, name: keyof MemoryStore) =>
      own[name] ?? (typeof s[name] === 'function' ? s[name].bind(s) : s[name]),
  });
  const { deps, clock } = setup(watched);
  const running = { response: { id: 'resp_1', status: 'in_progress', output: [] }, input: [] };
  await store.saveResponse('acme', 'resp_1', JSON.stringify({ ...running, session: 's' }));
  /** Logs events `from`…; told to the watcher unless `lost`. */
  const logged = async (from: number, to: number, lost = false) => {
    const events = Array.from({ length: to - from + 1 }, (_, i) => event(from + i));
    await store.appendEvents('acme', 'resp_1', events);
    if (!lost) tell(from, events);
    await settle(clock);
  };
  const client = new Client();
  const reading = follow(deps, 'acme', 'resp_1', -1, undefined, client);
  await settle(clock);
  const first = reads;
  await logged(0, 1);
  assert.equal(client.events.length, 2);
  assert.equal(reads, first, 'told, it reads nothing');
  await logged(2, 3, true);
  await logged(4, 4);
  assert.deepEqual(
    client.events,
    [0, 1, 2, 3, 4].map((n) => event(n)),
    'the two it was not told, read from the log, in order',
  );
  await logged(5, 5, true);
  assert.equal(client.events.length, 5, 'untold, not yet');
  await settle(clock, 1_000);
  assert.equal(client.events.length, 6, 'read within a second');
  const last = 'event: response.completed\ndata: {}\n\n';
  await store.appendEvents('acme', 'resp_1', [last]);
  tell(6, [last]);
  await reading;
  assert.equal(client.events.at(-1), last);
  assert.equal(client.ended, true);
});

test('a reader of a long log is sent a page at a time: the next once the client took the last', async () => {
  const { deps, clock } = setup();
  const log = Array.from({ length: 1_200 }, (_, n) => event(n));
  await deps.store.appendEvents('acme', 'resp_1', log);
  const slow = new Client(true);
  const reading = follow(deps, 'acme', 'resp_1', -1, undefined, slow);
  await settle(clock);
  assert.equal(slow.events.length, 500, 'one page, until the client takes it');
  slow.take();
  await settle(clock);
  assert.equal(slow.events.length, 1_000);
  slow.gone = true;
  slow.take();
  await settle(clock, 2_000);
  await reading;
  assert.equal(slow.events.length, 1_000, 'a client gone is sent no more');
});
