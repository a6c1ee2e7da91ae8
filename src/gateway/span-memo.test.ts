import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SpanMemo } from './span-memo.ts';

test('an answer is asked once per key in a span, and again in the next span', () => {
  const memo = new SpanMemo<string | undefined>(1);
  let asked = 0;
  const ask = (answer: string | undefined) => () => {
    asked++;
    return answer;
  };
  assert.equal(memo.get('a', 10, ask('first')), 'first');
  assert.equal(memo.get('a', 10.4, ask('second')), 'first', 'within the span');
  assert.equal(memo.get('b', 10.9, ask(undefined)), undefined, 'a key of its own');
  assert.equal(memo.get('b', 10.95, ask('later')), undefined, 'an undefined answer is kept too');
  assert.equal(asked, 2);
  assert.equal(memo.get('a', 11, ask('third')), 'third', 'the span is over: asked again');
  assert.equal(memo.get('b', 11.5, ask('fourth')), 'fourth', 'the new span started empty');
  assert.equal(asked, 4);
});
