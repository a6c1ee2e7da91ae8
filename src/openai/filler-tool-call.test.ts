// A filler reply held to a tool call: its words stream as the call's arguments, named by the
// first piece, closed by the finish at a stop, left open when cut at the output limit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FillerToolCall, requiredToolName } from './filler-tool-call.ts';
import { ToolCalls } from './chunks.ts';

test("a call's pieces gather into arguments that parse, once a stop closes them", () => {
  const call = new FillerToolCall('chatcmpl-tool-1', 'lookup');
  const gathered = new ToolCalls();
  gathered.add(call.piece('The'));
  gathered.add(call.piece(' "quoted"'));
  gathered.add(call.piece(' end'));
  const closing = call.finish('stop');
  assert.deepEqual(closing, [{ index: 0, function: { arguments: '"}' } }]);
  gathered.add(closing ?? []);
  const [whole] = gathered.whole() ?? [];
  assert.deepEqual(whole, call.whole());
  assert.deepEqual(whole, {
    id: 'chatcmpl-tool-1',
    type: 'function',
    function: { name: 'lookup', arguments: '{"input": "The \\"quoted\\" end"}' },
  });
  assert.deepEqual(JSON.parse(whole.function.arguments), { input: 'The "quoted" end' });
  assert.equal(FillerToolCall.finishReason('stop'), 'tool_calls');
});

test('cut at the limit, the arguments stay open and the reply ends as length', () => {
  const call = new FillerToolCall('chatcmpl-tool-2', 'lookup');
  call.piece('word');
  assert.equal(call.finish('length'), undefined);
  assert.equal(call.whole().function.arguments, '{"input": "word');
  assert.equal(FillerToolCall.finishReason('length'), 'length');
});

test('the function a request must call: the named one, or the first offered when required', () => {
  const tools = [
    { type: 'function' as const, function: { name: 'a' } },
    { type: 'function' as const, function: { name: 'b' } },
  ];
  assert.equal(requiredToolName({ tools, tool_choice: 'required' }), 'a');
  const named = { type: 'function' as const, function: { name: 'b' } };
  assert.equal(requiredToolName({ tools, tool_choice: named }), 'b');
  for (const tool_choice of ['auto', 'none', null, undefined] as const)
    assert.equal(requiredToolName({ tools, tool_choice }), undefined);
});
