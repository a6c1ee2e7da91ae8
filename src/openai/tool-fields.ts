/**
 * A chat's tools, as OpenAI's API and vLLM take them: the functions the model may call
 * (`tools`), whether and which it must call (`tool_choice`), and the calls an assistant made,
 * carried back in the history (`messages[i].tool_calls`). Main rules, vLLM's: a tool choice
 * other than `none` needs tools to choose from, and a named choice names one of them. A
 * simulated engine answers a call required with its words as the call's arguments
 * (filler-tool-call.ts).
 */
import { z } from 'zod';
import { byForm, expect, flag, isObject, jsonObject, judgedList, text } from './validation.ts';

const functionDefinition = z.strictObject(
  {
    name: text('a non-empty string').min(1),
    description: text('a string').nullish(),
    parameters: jsonObject('a JSON schema (an object)').nullish(),
    strict: flag(),
  },
  expect('an object ({"name": …, "parameters": {…}})'),
);

const tool = z.strictObject(
  { type: z.literal('function', expect('"function"')), function: functionDefinition },
  expect('a tool ({"type": "function", "function": {…}})'),
);

export const TOOL_CHOICES = ['none', 'auto', 'required'] as const;

const namedChoice = z.strictObject(
  {
    type: z.literal('function', expect('"function"')),
    function: z.strictObject({ name: text('a non-empty string').min(1) }, expect('{"name": …}')),
  },
  expect('{"type": "function", "function": {"name": …}}'),
);
const CHOICE_FORMS = {
  word: z.enum(TOOL_CHOICES, expect(`one of ${TOOL_CHOICES.join(', ')}`)),
  named: namedChoice,
};
const CHOICE = `one of ${TOOL_CHOICES.join(', ')}, or {"type": "function", "function": {"name": …}}`;
const choiceForm = (v: unknown) =>
  typeof v === 'string' ? CHOICE_FORMS.word : isObject(v) ? CHOICE_FORMS.named : undefined;

/** The request fields of tool calling. */
export const toolFields = {
  tools: judgedList(tool, 'an array of tools').nullish(),
  tool_choice: byForm<z.output<typeof namedChoice> | (typeof TOOL_CHOICES)[number]>(
    choiceForm,
    CHOICE,
  ).nullish(),
  /** false: at most one call per reply. */
  parallel_tool_calls: flag(),
};

/** One call an assistant made, as its message carries it back: the arguments are JSON text. */
const toolCall = z.strictObject(
  {
    id: text('a non-empty string').min(1),
    type: z.literal('function', expect('"function"')),
    function: z.strictObject(
      { name: text('a non-empty string').min(1), arguments: text('a string (JSON text)') },
      expect('{"name": …, "arguments": "…"}'),
    ),
  },
  expect('a tool call ({"id": …, "type": "function", "function": {…}})'),
);

/** An assistant's calls, as its message carries them back. */
export const toolCalls = judgedList(toolCall, 'an array of tool calls');

export type ChatTool = z.output<typeof tool>;
export type ToolCall = z.output<typeof toolCall>;
type ToolFields = { readonly [K in keyof typeof toolFields]?: z.output<(typeof toolFields)[K]> };

/**
 * vLLM's rules across the tool fields, for `.check()` on the chat schema: a tool choice other
 * than `none` needs tools, and a named one names one of them.
 */
export function checkToolRules(ctx: z.core.ParsePayload<ToolFields>): void {
  const { tools, tool_choice: choice } = ctx.value;
  if (choice == null || choice === 'none') return;
  const names = (tools ?? []).map((t) => t.function.name);
  if (names.length === 0) {
    ctx.issues.push({
      code: 'custom',
      path: ['tool_choice'],
      input: choice,
      message: '"none" or absent when no tools are given',
    });
  } else if (typeof choice === 'object' && !names.includes(choice.function.name)) {
    ctx.issues.push({
      code: 'custom',
      path: ['tool_choice', 'function', 'name'],
      input: choice.function.name,
      message: `the name of one of the tools (${names.map((n) => JSON.stringify(n)).join(', ')})`,
    });
  }
}
