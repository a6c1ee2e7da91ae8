import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TokenChunkShape, TokenShapes } from './token-chunk-shape.ts';

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

test('learnt with the chunk as the client is to get it, it forwards that chunk with the text read', () => {
  const vllm = (content: string) => JSON.stringify({ ...JSON.parse(chunk(content)), usage: null });
  const client = TokenChunkShape.learn(vllm(' the'), 'content', ' the', chunk(' the'));
  assert.ok(client);
  for (const text of [' quick', 'a"b', 'é 中文 🙂', '\\']) {
    assert.equal(client.text(vllm(text)), text);
    assert.equal(Buffer.from(client.forward(vllm(text))).toString(), `data: ${chunk(text)}\n\n`);
    const bytes = Buffer.from(`data: ${vllm(text)}\n\n`);
    assert.equal(client.frameText(bytes), text);
    assert.equal(Buffer.from(client.forwardFrame(bytes)).toString(), `data: ${chunk(text)}\n\n`);
  }
  // Learnt from the chunk as it came, the frame read is the frame forwarded.
  const bytes = Buffer.from(`data: ${chunk('x')}\n\n`);
  assert.equal(shape?.forwardFrame(bytes), bytes);
});

test("a reasoning model's stream: thinking and reply each learnt once, then read by their bytes", () => {
  const delta = (d: object, finish: string | null = null) =>
    JSON.stringify({
      id: 'chatcmpl-r1',
      object: 'chat.completion.chunk',
      model: 'qwen3',
      choices: [{ index: 0, delta: d, logprobs: null, finish_reason: finish }],
    });
  for (const field of ['reasoning', 'reasoning_content'] as const) {
    const shapes = new TokenShapes('content');
    const thought = (text: string) => delta({ [field]: text });
    assert.equal(shapes.read(thought('Hmm')), undefined, 'nothing learnt yet');
    shapes.learn(thought('Hmm'), { text: '', reasoning: { field, text: 'Hmm' } }, thought('Hmm'));
    // The chunk where thinking ends carries both: parsed whole, and learnt from by neither.
    const both = delta({ [field]: ' so', content: '7' });
    assert.equal(shapes.read(both), undefined);
    shapes.learn(both, { text: '7', reasoning: { field, text: ' so' } }, both);
    assert.equal(shapes.read(delta({ content: ' is' })), undefined, 'no reply shape yet');
    shapes.learn(delta({ content: ' is' }), { text: ' is' }, delta({ content: ' is' }));

    const next = shapes.read(thought('a "quote"'));
    assert.deepEqual(next?.reasoning, { field, text: 'a "quote"' });
    assert.equal(next?.text, '');
    assert.equal(Buffer.from(next?.sse ?? []).toString(), `data: ${thought('a "quote"')}\n\n`);
    const frame = shapes.readFrame(Buffer.from(`data: ${thought('x')}\n\n`));
    assert.deepEqual(frame?.reasoning, { field, text: 'x' });
    assert.deepEqual(shapes.read(delta({ content: ' prime' })), {
      text: ' prime',
      sse: Buffer.from(`data: ${delta({ content: ' prime' })}\n\n`),
    });
    assert.equal(shapes.read(delta({}, 'stop')), undefined, 'the finish is parsed whole');
  }
});
