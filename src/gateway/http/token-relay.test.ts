import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TokenRelay } from './token-relay.ts';
import type { Sent, TokenEvent } from '../backend.ts';

test('tokens held until the answer is chosen go to it in order, each with its sent hook', async () => {
  const relay = new TokenRelay();
  const sentAt: string[] = [];
  const hook =
    (name: string): Sent =>
    (ms) =>
      sentAt.push(`${name}@${ms}`);
  relay.sink({ text: 'a' });
  relay.sink({ text: 'b' }, hook('b'));
  await relay.first;
  const got: [string, Sent | undefined][] = [];
  const target = (t: TokenEvent, sent?: Sent) => {
    got.push([t.text, sent]);
    sent?.(got.length);
  };
  relay.drainTo(target);
  relay.sink({ text: 'c' }, hook('c'));
  relay.sink({ text: 'd' });
  assert.deepEqual(
    got.map(([t, s]) => [t, s !== undefined]),
    [
      ['a', false],
      ['b', true],
      ['c', true],
      ['d', false],
    ],
  );
  assert.deepEqual(sentAt, ['b@2', 'c@3'], 'each hook reached the answer, called as it wrote');
  assert.equal(relay.count, 4);
});
