import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sseData } from './sse-reader.ts';

async function collect(chunks: string[]): Promise<string[]> {
  async function* body() {
    for (const c of chunks) yield new TextEncoder().encode(c);
  }
  const out: string[] = [];
  for await (const d of sseData(body())) out.push(d);
  return out;
}

test('events split anywhere across chunks, CRLF, comments, multi-line data', async () => {
  const stream =
    ': keep-alive\r\n\r\ndata: {"a":1}\r\n\r\ndata: {"b"\n\ndata: line1\ndata: line2\n\ndata: [DONE]\n\n';
  const whole = await collect([stream]);
  assert.deepEqual(whole, ['{"a":1}', '{"b"', 'line1\nline2', '[DONE]']);
  for (let cut = 1; cut < stream.length; cut += 3) {
    assert.deepEqual(await collect([stream.slice(0, cut), stream.slice(cut)]), whole, `cut ${cut}`);
  }
});

test('a last event without its blank line is still delivered', async () => {
  assert.deepEqual(await collect(['data: x\n\ndata: [DONE]']), ['x', '[DONE]']);
});
