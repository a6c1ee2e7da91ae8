import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LoraResidency } from './lora-residency.ts';

test('adapters seen running stay held after their requests end, until newer ones fill the slots', () => {
  const r = new LoraResidency();
  assert.deepEqual(r.seen(['sql'], 2), ['sql']);
  // Its requests ended: vLLM's label is empty, the adapter still in its slot.
  assert.deepEqual(r.seen([], 2), ['sql']);
  assert.deepEqual(r.seen(['chat'], 2), ['sql', 'chat']);
  // A third evicts the least recently used: sql.
  assert.deepEqual(r.seen(['code'], 2), ['chat', 'code']);
  assert.deepEqual(r.seen(['chat'], 2), ['code', 'chat'], 'used again: most recent');
  // Running ones are never the ones forgotten, whatever the slot count says.
  assert.deepEqual(r.seen(['a', 'b', 'c'], 2), ['a', 'b', 'c']);
  const same = r.seen([], 3);
  assert.equal(r.seen([], 3), same, 'unchanged: the same list');
});
