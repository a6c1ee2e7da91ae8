import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ResponseBuilder, type ReplyPiece } from './response-events.ts';
import { parseResponsesRequest } from './responses-request.ts';

const HEAD = {
  id: 'r1',
  createdAt: 1_700_000_000,
  model: 'm',
  request: parseResponsesRequest({ model: 'm', input: 'hi', max_output_tokens: 9 }),
};

/** The SSE text as its events: each `event:` line's type must be its data's. */
function events(sse: string): { type: string; sequence_number: number; [k: string]: unknown }[] {
  return sse
    .split('\n\n')
    .filter((block) => block !== '')
    .map((block) => {
      const [eventLine, dataLine, ...rest] = block.split('\n');
      assert.deepEqual(rest, [], 'an event is two lines');
      const data = JSON.parse(dataLine.slice('data: '.length)) as { type: string };
      assert.equal(eventLine, `event: ${data.type}`);
      return data as { type: string; sequence_number: number };
    });
}

const PIECES: ReplyPiece[] = [
  { text: '', reasoning: { text: 'Hm' } },
  { text: 'A' },
  { text: 'B' },
  { text: '', toolCalls: [{ index: 0, id: 'c0', function: { name: 'f', arguments: '{' } }] },
  { text: '', toolCalls: [{ index: 0, function: { arguments: '}' } }] },
];

function run(end: { finishReason: string } | 'fail') {
  const b = new ResponseBuilder(HEAD, true);
  let sse = b.opening();
  for (const p of PIECES) sse += b.add(p);
  if (end === 'fail') sse += b.fail('upstream_error', 'the upstream failed mid-stream');
  else sse += b.finish({ ...end, promptTokens: 5, completionTokens: PIECES.length }).events;
  return events(sse);
}

test('each item is announced, grows and is closed before the next opens, numbered from 0', () => {
  const all = run({ finishReason: 'tool_calls' });
  assert.deepEqual(
    all.map((e) => e.sequence_number),
    all.map((_, i) => i),
  );
  assert.deepEqual(
    all.map((e) => e.type),
    [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.reasoning_text.delta',
      'response.reasoning_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ],
  );
  const last = all.at(-1) as unknown as { response: { output: { id: string; status?: string }[] } };
  const done = all.filter((e) => e.type === 'response.output_item.done');
  assert.deepEqual(
    last.response.output,
    done.map((e) => e.item),
    'the final output is the items as closed',
  );
  assert.deepEqual(
    done.map((e) => e.output_index),
    [0, 1, 2],
  );
});

test('a reply cut at its limit ends incomplete, its open item with it; a failed one says why', () => {
  const cut = run({ finishReason: 'length' });
  const end = cut.at(-1) as unknown as {
    type: string;
    response: { status: string; incomplete_details: unknown; output: { status?: string }[] };
  };
  assert.equal(end.type, 'response.incomplete');
  assert.deepEqual(end.response.incomplete_details, { reason: 'max_output_tokens' });
  assert.deepEqual(
    end.response.output.map((o) => o.status),
    [undefined, 'completed', 'incomplete'],
  );

  const failed = run('fail');
  const last = failed.at(-1) as unknown as {
    type: string;
    response: { status: string; error: unknown; output: { status?: string }[] };
  };
  assert.equal(last.type, 'response.failed');
  assert.deepEqual(last.response.error, {
    code: 'upstream_error',
    message: 'the upstream failed mid-stream',
  });
  assert.equal(last.response.output.at(-1)?.status, 'in_progress', 'the call it was making');
});

test('whole, it builds the same response and writes nothing', () => {
  const b = new ResponseBuilder(HEAD, false);
  let written = b.opening();
  for (const p of PIECES) written += b.add(p);
  const end = { finishReason: 'stop', promptTokens: 5, completionTokens: PIECES.length };
  const { events: tail, response } = b.finish(end);
  assert.equal(written + tail, '');
  const streamed = run({ finishReason: 'stop' }).at(-1) as unknown as { response: unknown };
  assert.deepEqual(response, streamed.response);
  assert.deepEqual((response as { usage: unknown }).usage, {
    input_tokens: 5,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 5,
    output_tokens_details: { reasoning_tokens: 1 },
    total_tokens: 10,
  });
});

test("a token's log probabilities go beside its delta, and the text's whole list on its part", () => {
  const entry = (token: string, logprob: number) => ({
    token,
    logprob,
    bytes: [],
    top_logprobs: [],
  });
  const b = new ResponseBuilder(HEAD, true);
  let sse = b.opening();
  sse += b.add({ text: 'A', logprobs: { content: [entry('A', -0.1)] } });
  sse += b.add({ text: 'B', logprobs: { content: [entry('B', -0.2)] } });
  const end = b.finish({ finishReason: 'stop', promptTokens: 1, completionTokens: 2 });
  const all = events(sse + end.events);
  const deltas = all.filter((e) => e.type === 'response.output_text.delta');
  assert.deepEqual(
    deltas.map((e) => e.logprobs),
    [[entry('A', -0.1)], [entry('B', -0.2)]],
  );
  const done = all.find((e) => e.type === 'response.output_text.done');
  assert.deepEqual(done?.logprobs, [entry('A', -0.1), entry('B', -0.2)]);
  const output = (end.response as { output: { content: { logprobs: unknown }[] }[] }).output;
  assert.deepEqual(output[0].content[0].logprobs, [entry('A', -0.1), entry('B', -0.2)]);
});
