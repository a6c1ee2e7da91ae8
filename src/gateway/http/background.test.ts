import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { VirtualClock } from '../../runtime/virtual-clock.ts';
import { MemoryStore } from '../shared/memory-store.ts';
import { StateMetrics } from '../state-metrics.ts';
import { RequestStopped } from '../stop.ts';
import { BackgroundRuns, SWEEP_MS } from './background-runs.ts';

/** Runs the clock past the next sweep and lets its store reads settle. */
async function sweep(clock: VirtualClock): Promise<void> {
  clock.run(clock.now() + SWEEP_MS);
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}

/** Replica A's runs over `store`, on `clock`, with metrics of their own. */
function runsOf(store: MemoryStore, clock: VirtualClock): BackgroundRuns {
  const state = new StateMetrics(new Registry());
  const keeping = { store, keepResponses: true, metrics: { state }, replica: 'replica-a' };
  return new BackgroundRuns(keeping, { clock, timers: clock }, true);
}

const record = (status: string) =>
  JSON.stringify({ response: { id: 'resp_1', status, output: [] }, input: [], session: 's' });

test('the sweep stops a run whose record is marked cancelled, ended or gone, never one not kept yet; its replica beats', async () => {
  const clock = new VirtualClock();
  const store = new MemoryStore({ clock });
  const runs = runsOf(store, clock);
  const ids = ['resp_1', 'resp_2', 'resp_3', 'resp_4'];
  const stops = ids.map((id) => {
    const stop = new AbortController();
    runs.add(id, 'acme', stop, false);
    return stop;
  });
  // resp_1 is admitted but its record not saved yet: no record is no mark.
  await sweep(clock);
  assert.deepEqual(
    stops.map((s) => s.signal.aborted),
    [false, false, false, false],
  );
  assert.equal(await store.alive('replica-a'), true, 'it said it is alive');
  await store.saveResponse('acme', 'resp_2', record('cancelled'));
  await store.saveResponse('acme', 'resp_3', record('queued'));
  await store.saveResponse('acme', 'resp_4', record('failed'));
  for (const id of ids) runs.kept(id);
  // resp_1 kept, then deleted elsewhere; resp_2 cancelled elsewhere; resp_3 runs on; resp_4
  // was taken for lost elsewhere, and stops as it was kept.
  await sweep(clock);
  assert.deepEqual(
    stops.map((s) => s.signal.aborted),
    [true, true, false, true],
  );
  assert.equal(runs.cancelled('resp_2'), true);
  assert.equal(runs.cancelled('resp_4'), false, 'not cancelled: kept failed');
  assert.equal(runs.cancel('other-tenant', 'resp_3'), false, "not another tenant's to cancel");
  runs.close();
});

test('at a drain, runs still queued and kept are stopped to be handed over — only when another replica serves', async () => {
  const clock = new VirtualClock();
  const store = new MemoryStore({ clock });
  const start = () => {
    const runs = runsOf(store, clock);
    runs.adoptWith(async () => {});
    const stops = ['resp_q', 'resp_run', 'resp_new', 'resp_x'].map((id) => {
      const stop = new AbortController();
      runs.add(id, 'acme', stop, false);
      if (id !== 'resp_new') runs.kept(id);
      if (id !== 'resp_run') runs.waiting(id, true);
      return stop;
    });
    runs.cancel('acme', 'resp_x');
    return { runs, stops };
  };
  // Alone, it hands nothing over: what it runs waits for its drain.
  const alone = start();
  assert.equal(await alone.runs.handOver(), 0);
  assert.deepEqual(
    alone.stops.map((s) => s.signal.aborted),
    [false, false, false, true],
  );
  assert.deepEqual(await store.serving(), [], 'draining, it serves no more');
  alone.runs.close();
  await store.beat('replica-b', 10_000, true);
  const { runs, stops } = start();
  assert.equal(await runs.handOver(), 1);
  assert.equal(runs.draining, true, 'it takes no order more');
  // Queued and kept: handed; running, or not kept yet, or cancelled: not.
  assert.deepEqual(
    stops.map((s) => s.signal.aborted),
    [true, false, false, true],
  );
  const why: unknown = stops[0].signal.reason;
  assert.ok(why instanceof RequestStopped && why.why === 'handed_over');
  assert.equal(runs.handed('resp_q'), true);
  assert.equal(runs.handed('resp_run'), false);
  // Admitted as the drain began: kept, or queued, only after its scan — handed all the same.
  runs.kept('resp_new');
  assert.equal(stops[2].signal.aborted, true, 'kept after the scan');
  const late = new AbortController();
  runs.add('resp_late', 'acme', late, false);
  runs.kept('resp_late');
  assert.equal(late.signal.aborted, false, 'kept, not queued yet');
  runs.waiting('resp_late', true);
  assert.equal(runs.handed('resp_late'), true, 'queued after the scan');
  runs.close();
});
