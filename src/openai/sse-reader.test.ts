import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseReader } from './sse-reader.ts';

function collect(chunks: string[]): string[] {
  const reader = new SseReader();
  return [...chunks.flatMap((c) => reader.push(c)), ...reader.end()];
}

test('events split anywhere across chunks, CRLF, comments, multi-line data', () => {
  const stream =
    ': keep-alive\r\n\r\ndata: {"a":1}\r\n\r\ndata: {"b"\n\ndata: line1\ndata: line2\n\ndata: [DONE]\n\n';
  const whole = collect([stream]);
  assert.deepEqual(whole, ['{"a":1}', '{"b"', 'line1\nline2', '[DONE]']);
  for (let cut = 1; cut < stream.length; cut++) {
    assert.deepEqual(collect([stream.slice(0, cut), stream.slice(cut)]), whole, `cut ${cut}`);
  }
  assert.deepEqual(collect([...stream]), whole, 'one character at a time');
});

test('a last event without its blank line is still delivered', () => {
  assert.deepEqual(collect(['data: x\n\ndata: [DONE]']), ['x', '[DONE]']);
  assert.deepEqual(collect(['data: x\n']), ['x']);
  assert.deepEqual(collect(['']), []);
});
