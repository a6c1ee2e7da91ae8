import { test } from 'node:test';
import assert from 'node:assert/strict';
import { orderText, readOrder, type Order } from './background-handover.ts';

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
