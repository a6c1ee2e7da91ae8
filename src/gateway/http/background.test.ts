import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { VirtualClock } from '../../runtime/virtual-clock.ts';
import { MemoryStore } from '../shared/memory-store.ts';
import { StateMetrics } from '../state-metrics.ts';
import { BackgroundRuns, SWEEP_MS } from './background.ts';

/** Runs the clock past the next sweep and lets its store reads settle. */
async function sweep(clock: VirtualClock): Promise<void> {
  clock.run(clock.now() + SWEEP_MS);
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}

const record = (status: string) =>
  JSON.stringify({ response: { id: 'resp_1', status, output: [] }, input: [], session: 's' });

test('the sweep stops a run whose record is marked cancelled, ended or gone, never one not kept yet; its replica beats', async () => {
  const clock = new VirtualClock();
  const store = new MemoryStore({ clock });
  const keeping = {
    store,
    keepResponses: true,
    metrics: { state: new StateMetrics(new Registry()) },
    replica: 'replica-a',
  };
  const runs = new BackgroundRuns(keeping, { clock, timers: clock }, true);
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
