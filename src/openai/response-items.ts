/**
 * The Responses API's `input`, as OpenAI's API and vLLM take it: a string (the user's), or a
 * conversation's items — messages of text parts, the function calls a reply made and their
 * outputs, a reasoning model's thinking carried back — and what chat makes of them
 * (`chatMessages`). Main rule: a list is judged to its first bad element, its commonest forms
 * (a message of text) passed by a plain test of their fields, so a hostile body costs
 * milliseconds to refuse; a part that is neither text nor a user's image (image-parts.ts), or an
 * item of a built-in tool, is a 400 naming it.
 */
import { z } from 'zod';
import { MAX_MESSAGES } from './chat-request.ts';
import { firstImage, inputImagePart, isInputImagePart } from './image-parts.ts';
import { neutralOnly } from './unsupported-fields.ts';
import { byForm, expect, isObject, isText, judgedList, text } from './validation.ts';

/** The most input items a request may carry: its instructions take one chat message more. */
export const MAX_INPUT_ITEMS = MAX_MESSAGES - 1;

const PARTS = ['input_text', 'output_text', 'refusal', 'input_image'] as const;
const PART = `a text part (input_text, output_text, refusal) or an image (input_image); files and audio are not modelled`;

/** A message's content parts: what the client wrote, or a reply's text carried back. */
const PART_FORMS = {
  input_text: z.strictObject({ type: z.literal('input_text'), text: text('a string') }),
  output_text: z.strictObject({
    type: z.literal('output_text'),
    text: text('a string'),
    annotations: neutralOnly([[]]),
    // A reply's log probabilities carried back with its text, and the official client's parse
    // of it: no part of the prompt.
    logprobs: z.array(z.unknown(), expect('an array')).nullish(),
    parsed: z.unknown().optional(),
  }),
  refusal: z.strictObject({ type: z.literal('refusal'), refusal: text('a string') }),
  input_image: inputImagePart,
  other: z.looseObject({ type: z.enum(PARTS, expect(PART)) }),
};
const contentPart = byForm((v) => {
  if (!isObject(v)) return undefined;
  return (PART_FORMS as Record<string, z.ZodType>)[v.type as string] ?? PART_FORMS.other;
}, PART);
export type ContentPart = z.output<(typeof PART_FORMS)[(typeof PARTS)[number]]>;
const isInputText = (v: unknown): boolean =>
  isObject(v) && v.type === 'input_text' && isText(v.text) && Object.keys(v).length === 2;

/** A string, or a list `list` judges: the two forms of a message's content and of input. */
function textOr<T>(list: z.ZodType<T[]>, expectation: string) {
  const forms = { text: text('a string'), list };
  return byForm<string | T[]>(
    (v) => (typeof v === 'string' ? forms.text : Array.isArray(v) ? forms.list : undefined),
    expectation,
  );
}

const CONTENT = 'a string or a non-empty array of content parts';
const content = textOr(
  judgedList(contentPart, CONTENT, 1, (v) => isInputText(v) || isInputImagePart(v)) as z.ZodType<
    ContentPart[]
  >,
  CONTENT,
);

export const INPUT_ROLES = ['user', 'assistant', 'system', 'developer'] as const;
const ITEM_STATUS = z
  .enum(['in_progress', 'completed', 'incomplete'], expect('in_progress, completed or incomplete'))
  .nullish();

/** An image where only text goes: in a message not the user's, or in a tool's output. */
function textOnly(field: 'content' | 'output', whose: string) {
  return (ctx: z.core.ParsePayload<Record<string, unknown>>) => {
    const at = field === 'content' && ctx.value.role === 'user' ? -1 : firstImage(ctx.value[field]);
    if (at < 0) return;
    const message = `text in ${whose} (an image is a user's message's, as chat takes it)`;
    ctx.issues.push({ code: 'custom', path: [field, at, 'type'], input: 'input_image', message });
  };
}

/** The input items, by their `type`; a message may leave its type out. */
const ITEM_FORMS = {
  message: z
    .strictObject({
      type: z.literal('message').optional(),
      role: z.enum(INPUT_ROLES, expect(`one of ${INPUT_ROLES.join(', ')}`)),
      content,
      id: text('a string').nullish(),
      status: ITEM_STATUS,
      phase: z.enum(['commentary', 'final_answer'], expect('commentary or final_answer')).nullish(),
    })
    .check(textOnly('content', "a message not the user's")),
  function_call: z.strictObject({
    type: z.literal('function_call'),
    call_id: text('a non-empty string').min(1),
    name: text('a non-empty string').min(1),
    arguments: text('a string (JSON text)'),
    id: text('a string').nullish(),
    status: ITEM_STATUS,
    // The official client's parse of the arguments: no part of the prompt.
    parsed_arguments: z.unknown().optional(),
  }),
  function_call_output: z
    .strictObject({
      type: z.literal('function_call_output'),
      call_id: text('a non-empty string').min(1),
      output: content,
      id: text('a string').nullish(),
      status: ITEM_STATUS,
    })
    .check(textOnly('output', "a tool's output")),
  reasoning: z.strictObject({
    type: z.literal('reasoning'),
    id: text('a string').nullish(),
    summary: z.array(z.unknown(), expect('an array')),
    content: z.array(z.unknown(), expect('an array')).nullish(),
    encrypted_content: text('a string').nullish(),
    status: ITEM_STATUS,
  }),
};
const ITEM_TYPES = Object.keys(ITEM_FORMS) as (keyof typeof ITEM_FORMS)[];
const ITEM = `an input item (${ITEM_TYPES.join(', ')})`;
const unknownItem = z.looseObject({
  type: z.enum(ITEM_TYPES, expect(`one of ${ITEM_TYPES.join(', ')}`)),
});
const inputItem = byForm((v) => {
  if (!isObject(v)) return undefined;
  if (v.type === undefined) return ITEM_FORMS.message;
  return (ITEM_FORMS as Record<string, z.ZodType>)[v.type as string] ?? unknownItem;
}, ITEM);
export type InputItem = z.output<(typeof ITEM_FORMS)[keyof typeof ITEM_FORMS]>;

/** A message of a role and its text, or of input text parts: what most of a conversation is. */
const isPlainMessage = (v: unknown): boolean => {
  if (!isObject(v) || !(INPUT_ROLES as readonly unknown[]).includes(v.role)) return false;
  const c = v.content;
  const fine = isText(c) || (Array.isArray(c) && c.length > 0 && c.every(isInputText));
  const keys = Object.keys(v).length;
  return fine && (keys === 2 || (keys === 3 && v.type === 'message'));
};

const INPUT = 'a string or a non-empty array of input items';
export const input = textOr(
  judgedList(inputItem, INPUT, 1, isPlainMessage) as z.ZodType<InputItem[]>,
  INPUT,
);

type ChatMessageIn = Record<string, unknown> & { role: string };

/**
 * The chat messages a conversation is: instructions as the system message, each message as it
 * reads, a reply's function calls as its assistant message's tool calls, their outputs as tool
 * messages. A reasoning item is not rendered.
 */
export function chatMessages(
  instructions: string | null | undefined,
  conversation: string | readonly InputItem[],
): ChatMessageIn[] {
  const messages: ChatMessageIn[] = [];
  if (instructions != null) messages.push({ role: 'system', content: instructions });
  const items =
    typeof conversation === 'string' ? [{ role: 'user', content: conversation }] : conversation;
  for (const item of items) {
    if (!('type' in item) || item.type === undefined || item.type === 'message') {
      const m = item as { role: string; content: string | ContentPart[] };
      messages.push({ role: m.role, content: chatContent(m.content) });
    } else if (item.type === 'function_call') {
      const call = {
        id: item.call_id,
        type: 'function',
        function: { name: item.name, arguments: item.arguments },
      };
      // A reply's calls join its message, as chat carries them.
      const last = messages.at(-1);
      if (last?.role === 'assistant') ((last.tool_calls ??= []) as unknown[]).push(call);
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (item.type === 'function_call_output') {
      messages.push({
        role: 'tool',
        tool_call_id: item.call_id,
        content: chatContent(item.output),
      });
    }
  }
  return messages;
}

/** A message's content as chat takes it: its text, or its parts as chat's (text, an image). */
function chatContent(c: string | ContentPart[]): string | object[] {
  if (typeof c === 'string') return c;
  return c.map((p) => {
    if (p.type === 'input_image') {
      const detail = p.detail == null ? {} : { detail: p.detail };
      return { type: 'image_url', image_url: { url: p.image_url, ...detail } };
    }
    return { type: 'text', text: p.type === 'refusal' ? p.refusal : p.text };
  });
}

/** The prefix of an input item's id, by its type, as OpenAI's ids read. */
const ID_PREFIX = {
  message: 'msg',
  function_call: 'fc',
  function_call_output: 'fco',
  reasoning: 'rs',
};

/**
 * A conversation's items as a stored response keeps them: a string is the user's message, and
 * each item has its type and an id — its own, or `<prefix>_<id>_in<n>`. Their content is as it
 * came, so the next turn's prompt renders its history as this turn's did.
 */
export function conversationItems(
  conversation: string | readonly InputItem[],
  id: string,
): InputItem[] {
  const items =
    typeof conversation === 'string'
      ? [{ role: 'user' as const, content: conversation }]
      : conversation;
  return items.map((item, n) => {
    const type = item.type ?? 'message';
    return { ...item, type, id: item.id ?? `${ID_PREFIX[type]}_${id}_in${n}` } as InputItem;
  });
}

/**
 * An item as `GET /v1/responses/{id}/input_items` lists it: a message's text as its one text
 * part (the user's input text, an assistant's output text).
 */
export function listedItem(item: InputItem): InputItem {
  if (!('role' in item) || typeof item.content !== 'string') return item;
  const text = item.content;
  const part =
    item.role === 'assistant'
      ? { type: 'output_text' as const, text, annotations: [] }
      : { type: 'input_text' as const, text };
  return { ...item, content: [part] } as InputItem;
}
