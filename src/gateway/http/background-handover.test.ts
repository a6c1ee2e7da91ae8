import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { VirtualClock } from '../../runtime/virtual-clock.ts';
import { MemoryStore } from '../shared/memory-store.ts';
import { StateMetrics } from '../state-metrics.ts';
import { adopt, orderText, readOrder, type Order } from './background-handover.ts';
import { keptText } from './kept-records.ts';
import type { CompletionsDeps } from './completions.ts';

const ORDER: Order = {
  tenant: 'acme',
  requestId: 'req-1',
  createdS: 1_700_000_000,
  told: 2,
  arrivalEpochMs: 1_700_000_000_123,
  headers: { 'x-goodput-class': 'batch' },
  body: '{"model":"m","input":"Hi","background":true}',
};

test('an order reads back as it was kept; anything else is none', () => {
  assert.deepEqual(readOrder(orderText(ORDER)), ORDER);
  for (const text of [
    'not json',
    'null',
    '"order"',
    JSON.stringify({ ...ORDER, body: 7 }),
    JSON.stringify({ ...ORDER, told: 'two' }),
    JSON.stringify({ ...ORDER, headers: { 'x-goodput-class': 1 } }),
    JSON.stringify({ ...ORDER, headers: null }),
  ])
    assert.equal(readOrder(text), undefined, text);
});

test('an order taken as its replica begins to drain goes back for another; one unread is dropped', async () => {
  const store = new MemoryStore({ clock: new VirtualClock() });
  const state = new StateMetrics(new Registry());
  const deps = { store, background: { draining: true }, metrics: { state } };
  await adopt(orderText(ORDER), deps as unknown as CompletionsDeps);
  assert.deepEqual(await store.takeHandedOver(10), [orderText(ORDER)]);
  await adopt('{"not":"an order"}', deps as unknown as CompletionsDeps);
  const dropped = await state.handovers.get();
  assert.deepEqual(
    dropped.values.map((v) => [v.labels.op, v.value]),
    [['dropped', 1]],
  );
});

test('an order whose record the store cannot read now goes back, to be read again', async () => {
  class Unreadable extends MemoryStore {
    override loadResponsePrefix(): Promise<string | undefined> {
      return Promise.reject(new Error('connection lost'));
    }
  }
  const store = new Unreadable({ clock: new VirtualClock() });
  const state = new StateMetrics(new Registry());
  const deps = { store, background: { draining: false }, metrics: { state } };
  await adopt(orderText(ORDER), deps as unknown as CompletionsDeps);
  assert.deepEqual(await store.takeHandedOver(10), [orderText(ORDER)]);
  const ops = await state.handovers.get();
  assert.deepEqual(ops.values, [], 'neither dropped nor run');
});

test('an order taken as its replica begins to drain while it reads the record goes back, refused by none', async () => {
  const background = { draining: false };
  class DrainsAsRead extends MemoryStore {
    override loadResponsePrefix(tenant: string, id: string, chars: number) {
      background.draining = true;
      return super.loadResponsePrefix(tenant, id, chars);
    }
  }
  const store = new DrainsAsRead({ clock: new VirtualClock() });
  const queued = {
    response: { id: 'resp_req-1', status: 'queued', output: [] },
    input: [],
    session: 's',
  };
  await store.saveResponse('acme', 'resp_req-1', keptText(queued));
  const state = new StateMetrics(new Registry());
  // Nothing here serves a request: one admitted would throw.
  const deps = { store, background, metrics: { state } };
  await adopt(orderText(ORDER), deps as unknown as CompletionsDeps);
  assert.deepEqual(await store.takeHandedOver(10), [orderText(ORDER)]);
  assert.deepEqual((await state.handovers.get()).values, [], 'neither refused nor run');
});
