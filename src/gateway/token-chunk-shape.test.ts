import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TokenChunkShape } from './token-chunk-shape.ts';

const chunk = (content: string, finish: string | null = null, id = 'chatcmpl-r1') =>
  JSON.stringify({
    id,
    object: 'chat.completion.chunk',
    created: 1796000000,
    model: 'llama-3-8b',
    choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: finish }],
  });

const shape = TokenChunkShape.learn(chunk(' the'), 'content', ' the');

test('learnt from one token chunk, it reads the text of the next ones', () => {
  assert.ok(shape);
  for (const text of [' quick', '', 'a"b', 'back\\slash', 'é 中文 🙂', '\n\t', '\\', '"']) {
    assert.equal(shape.text(chunk(text)), text, JSON.stringify(text));
  }
});

test('anything but a token chunk of the same shape goes to the full parse', () => {
  assert.ok(shape);
  assert.equal(shape.text(chunk('x', 'length')), undefined, 'a finish');
  assert.equal(shape.text(chunk('x', null, 'chatcmpl-other')), undefined, 'another id');
  assert.equal(shape.text('[DONE]'), undefined);
  const prefix = chunk('').slice(0, chunk('').indexOf('"content":"') + 11);
  const suffix = chunk('').slice(prefix.length);
  // Text that is not one JSON string body: it would end the string early or escape its quote.
  for (const middle of ['x","finish_reason":"stop', 'x\\', 'bad \\q escape', 'raw\ncontrol']) {
    assert.equal(shape.text(prefix + middle + suffix), undefined, JSON.stringify(middle));
  }
});

test('no shape when the text is not where JSON.stringify would write it, or the field repeats', () => {
  assert.equal(TokenChunkShape.learn(chunk('é'), 'content', 'x'), undefined);
  assert.equal(
    TokenChunkShape.learn('{"choices":[{"delta":{"content": "a"}}]}', 'content', 'a'),
    undefined,
    'a space after the colon',
  );
  assert.equal(
    TokenChunkShape.learn('{"content":"a","x":{"content":"a"}}', 'content', 'a'),
    undefined,
  );
  const text = TokenChunkShape.learn('{"id":"cmpl-1","choices":[{"text":"hi"}]}', 'text', 'hi');
  assert.equal(text?.text('{"id":"cmpl-1","choices":[{"text":" there"}]}'), ' there');
});
