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

test('a line or an event longer than the bound throws: a broken stream, not a slow one', () => {
  const r = new SseReader(100);
  assert.deepEqual(r.push(`data: ${'x'.repeat(90)}\n\n`), ['x'.repeat(90)]);
  // One line in pieces, no end in sight.
  const pieces = new SseReader(100);
  pieces.push('data: ');
  for (let i = 0; i < 9; i++) pieces.push('x'.repeat(10));
  assert.throws(() => pieces.push('x'.repeat(10)), /an event ran past 100 characters/);
  // Lines each under the bound, one event over it.
  const lines = new SseReader(100);
  assert.throws(
    () => lines.push(`data: ${'y'.repeat(60)}\ndata: ${'y'.repeat(60)}\n`),
    /ran past 100/,
  );
  // A line end in a later piece still ends the line held.
  const split = new SseReader(100);
  assert.deepEqual(split.push('data: a'), []);
  assert.deepEqual(split.push('b\r'), []);
  assert.deepEqual(split.push('\n\n'), ['ab']);
});
