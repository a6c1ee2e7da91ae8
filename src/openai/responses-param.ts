/**
 * A backend refuses the chat request a Responses request became (`asChatRequest`), naming the
 * field at fault in chat's words; the client sent the Responses request and looks for its own.
 * Main rule: each chat field is named as the Responses field it was made from, and a field with
 * no counterpart is named as the backend named it.
 */

/** Chat's fields (and the paths under them) as a Responses request names them. */
const RENAMED: readonly (readonly [RegExp, string])[] = [
  // The instructions and the input make the messages, one for one but not index for index.
  [/^messages(?:$|[.[].*)/, 'input'],
  [/^max_(?:completion_)?tokens$/, 'max_output_tokens'],
  [/^response_format\.json_schema(?=$|[.[])/, 'text.format'],
  [/^response_format(?=$|[.[])/, 'text.format'],
  [/^(tools\[\d+\])\.function(?=$|[.[])/, '$1'],
  [/^tool_choice\.function(?=$|[.[])/, 'tool_choice'],
  [/^logprobs$/, 'include'],
  [/^chat_template_kwargs(?:$|[.[].*)/, 'reasoning.effort'],
];

/** The Responses field a backend's `param` (a chat field) names; other params as they are. */
export function responsesParam(chatParam: string): string {
  for (const [chat, responses] of RENAMED) {
    if (chat.test(chatParam)) return chatParam.replace(chat, responses);
  }
  return chatParam;
}
