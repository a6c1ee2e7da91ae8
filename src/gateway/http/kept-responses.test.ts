import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { VirtualClock } from '../../runtime/virtual-clock.ts';
import type { InputItem } from '../../openai/index.ts';
import { MemoryStore } from '../shared/memory-store.ts';
import { StateMetrics } from '../state-metrics.ts';
import { keptText, loadHead, loadKept, loadSettledHead, type KeptRecord } from './kept-records.ts';

const deps = (clock = new VirtualClock()) => ({
  store: new MemoryStore({ clock }),
  keepResponses: true,
  metrics: { state: new StateMetrics(new Registry()) },
});

// A conversation whose text would end a head read by a scan for its end: braces, quotes and a
// `"input":` of its own.
const input = [
  { type: 'message', role: 'user', content: 'a } "input": ] { ü 😀 \\"', id: 'msg_0' },
] as unknown as InputItem[];

test("a record's head is read alone, and the whole as JSON, with its conversation", async () => {
  const d = deps();
  const record: KeptRecord = {
    response: { id: 'resp_1', status: 'in_progress', output: [] },
    input,
    session: 's "1" }',
    streamed: true,
    runner: 'replica-a',
  };
  const text = keptText(record);
  assert.match(text, /^\{"head_chars":\d+,"response":/);
  await d.store.saveResponse('acme', 'resp_1', text);
  const { input: _, ...head } = record;
  assert.deepEqual(await loadHead(d, 'acme', 'resp_1'), head);
  const whole = await loadKept(d, 'acme', 'resp_1');
  assert.deepEqual(whole, record, 'the record, its told length not a field of it');
  // Kept again as read (a cancel, a runner lost), its head is told once, anew.
  const again = keptText({ ...(whole as KeptRecord), session: 'again' });
  assert.equal(again.match(/"head_chars"/g)?.length, 1);
  // A head longer than a first read (a long reply, non-ASCII) is read in a second.
  const reply = [{ type: 'message', content: 'é😀'.repeat(5_000), id: 'msg_1' }];
  const long = { ...record, response: { ...record.response, output: reply as InputItem[] } };
  await d.store.saveResponse('acme', 'resp_3', keptText(long));
  const { input: __, ...longHead } = long;
  assert.deepEqual(await loadHead(d, 'acme', 'resp_3'), longHead);
  // A record kept before heads were told is read whole, either way.
  await d.store.saveResponse('acme', 'resp_2', JSON.stringify({ ...record, session: 'old' }));
  assert.equal((await loadHead(d, 'acme', 'resp_2'))?.session, 'old');
  assert.equal(await loadHead(d, 'acme', 'resp_none'), undefined);
});

test('a record whose runner is gone is settled by one reader of those reading it at once', async () => {
  const clock = new VirtualClock();
  const d = { ...deps(clock), replica: 'replica-b' };
  for (const [id, status] of [
    ['resp_run', 'in_progress'],
    ['resp_wait', 'queued'],
    ['resp_handed', 'queued'],
  ]) {
    const record: KeptRecord = {
      response: { id, status, output: [] },
      input,
      session: 's',
      runner: 'replica-gone',
    };
    await d.store.saveResponse('acme', id, keptText(record));
  }
  await d.store.keepOrder('acme', 'resp_wait', 'its order');
  const read = (id: string) => Promise.all([1, 2, 3].map(() => loadSettledHead(d, 'acme', id)));
  const running = await read('resp_run');
  assert.deepEqual(running.map((r) => r?.response.status).sort(), [
    'failed',
    'in_progress',
    'in_progress',
  ]);
  assert.equal((await d.metrics.state.backgroundLost.get()).values[0].value, 1, 'lost once');
  const waiting = await read('resp_wait');
  assert.deepEqual(
    waiting.map((r) => r?.response.status),
    ['queued', 'queued', 'queued'],
  );
  assert.deepEqual(await d.store.takeHandedOver(10), ['its order'], 'handed over once');
  const head = await loadHead(d, 'acme', 'resp_wait');
  assert.equal(head?.runner, undefined, 'kept queued, no runner named: not lost meanwhile');
  // Its order not kept, it was handed over as its runner drained: it waits to be taken as long.
  const handed = await read('resp_handed');
  assert.deepEqual(
    handed.map((r) => r?.response.status),
    ['queued', 'queued', 'queued'],
  );
  assert.equal((await loadHead(d, 'acme', 'resp_handed'))?.runner, undefined);
  assert.equal((await d.metrics.state.backgroundLost.get()).values[0].value, 1, 'not lost yet');
  /** The clock moved on to `ms`. */
  const to = (ms: number) => {
    clock.at(ms, () => {});
    clock.run(ms);
  };
  to(29_000);
  for (const id of ['resp_wait', 'resp_handed'])
    assert.equal((await read(id))[0]?.response.status, 'queued', `${id}: a replica may take it`);
  // Taken by none in time (its taker killed as it took it): lost, once.
  to(31_000);
  for (const id of ['resp_wait', 'resp_handed']) {
    assert.deepEqual((await read(id)).map((r) => r?.response.status).sort(), [
      'failed',
      'queued',
      'queued',
    ]);
    assert.equal((await loadHead(d, 'acme', id))?.response.status, 'failed');
  }
  assert.equal((await d.metrics.state.backgroundLost.get()).values[0].value, 3);
});

test('a queued record taken by another replica as its runner is found gone is left to it', async () => {
  const clock = new VirtualClock();
  const d = { ...deps(clock), replica: 'replica-b' };
  const record: KeptRecord = {
    response: { id: 'resp_1', status: 'queued', output: [] },
    input,
    session: 's',
    runner: 'replica-gone',
  };
  await d.store.saveResponse('acme', 'resp_1', keptText(record));
  // Adopted by replica-c between the reader's first read and its settling.
  const settling = d.store.settling.bind(d.store);
  d.store.settling = async (tenant, id, ms) => {
    const adopted = { ...record, runner: 'replica-c' };
    await d.store.saveResponse(tenant, id, keptText(adopted));
    return settling(tenant, id, ms);
  };
  const read = await loadSettledHead(d, 'acme', 'resp_1');
  assert.equal(read?.runner, 'replica-c');
  assert.equal((await loadHead(d, 'acme', 'resp_1'))?.runner, 'replica-c', 'not written over');
  assert.equal((await d.metrics.state.backgroundLost.get()).values[0]?.value ?? 0, 0);
});
