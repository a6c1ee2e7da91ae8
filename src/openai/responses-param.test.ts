import { test } from 'node:test';
import assert from 'node:assert/strict';
import { responsesParam } from './responses-param.ts';

test("a backend's chat field is named as the Responses field it was made from", () => {
  const cases = [
    ['messages', 'input'],
    ['messages[3].content', 'input'],
    ['max_tokens', 'max_output_tokens'],
    ['max_completion_tokens', 'max_output_tokens'],
    ['response_format', 'text.format'],
    ['response_format.type', 'text.format.type'],
    ['response_format.json_schema.schema.properties', 'text.format.schema.properties'],
    ['tools[2].function.parameters', 'tools[2].parameters'],
    ['tool_choice.function.name', 'tool_choice.name'],
    ['logprobs', 'include'],
    ['chat_template_kwargs', 'reasoning.effort'],
    // No counterpart, or the same name: as the backend said it.
    ['temperature', 'temperature'],
    ['top_logprobs', 'top_logprobs'],
    ['max_tokens_extra', 'max_tokens_extra'],
    ['messagesx', 'messagesx'],
  ] as const;
  for (const [chat, responses] of cases) assert.equal(responsesParam(chat), responses, chat);
});
