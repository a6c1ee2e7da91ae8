/**
 * What a request may hold its reply's form to, on both endpoints, as vLLM takes it: OpenAI's
 * `response_format` (any JSON object, or JSON under a schema), vLLM's `structured_outputs` (a
 * schema, a regular expression, a choice of strings, a grammar…) and its older `guided_json`,
 * `guided_regex`, `guided_choice` and `guided_grammar`. Main rules, vLLM's: one constraint per
 * reply, of one kind; a reply held to a form cannot also be a tool call required. Whether a
 * server can decode under a constraint is its own to say (`unconstrainedOnly`).
 */
import { z } from 'zod';
import { describeValue, invalidRequest } from './errors.ts';
import { byForm, expect, flag, isObject, isText, jsonObject, listOf, text } from './validation.ts';

const SCHEMA = 'a JSON schema (an object)';
const schemaObject = jsonObject(SCHEMA);

/** OpenAI's JSON schema format, as vLLM takes it: a name, and the schema the reply follows. */
const jsonSchemaFormat = z.strictObject(
  {
    name: text('a non-empty string').min(1),
    description: text('a string').nullish(),
    schema: schemaObject.nullish(),
    strict: flag(),
  },
  expect('an object ({"name": …, "schema": {…}})'),
);

export const RESPONSE_FORMATS = ['text', 'json_object', 'json_schema'] as const;

/**
 * The reply's format: text, any JSON object, or JSON following a schema (vLLM's structured
 * outputs decode it under the schema's grammar). `json_schema` goes with its type alone.
 */
const responseFormat = z
  .strictObject(
    {
      type: z.enum(RESPONSE_FORMATS, expect(`one of ${RESPONSE_FORMATS.join(', ')}`)),
      json_schema: jsonSchemaFormat.nullish(),
    },
    expect('an object ({"type": "json_object"}, …)'),
  )
  .check((ctx) => {
    const f = ctx.value;
    if ((f.type === 'json_schema') === (f.json_schema != null)) return;
    ctx.issues.push({
      code: 'custom',
      path: ['json_schema'],
      input: f.json_schema,
      message:
        f.type === 'json_schema'
          ? 'an object ({"name": …, "schema": {…}}) when type is json_schema'
          : 'absent unless type is json_schema',
    });
  });

/** vLLM takes a schema as an object or as its JSON text. */
const JSON_FORMS = { text: text(`${SCHEMA}, or its JSON text`), object: schemaObject };
const schema = byForm(
  (v): z.ZodType<string | Record<string, unknown>> | undefined =>
    typeof v === 'string' ? JSON_FORMS.text : isObject(v) ? JSON_FORMS.object : undefined,
  `${SCHEMA}, or its JSON text`,
);
const choices = listOf(isText, text('a string'), 'a non-empty array of strings', 1);
const regex = () => text('a regular expression (a string)');
const grammar = () => text('a grammar (a string)');

/** The kinds of vLLM's structured outputs, one of which a request's names. */
export const STRUCTURED_KINDS = [
  'json',
  'regex',
  'choice',
  'grammar',
  'json_object',
  'structural_tag',
] as const;

const structuredOutputs = z
  .strictObject(
    {
      json: schema.nullish(),
      regex: regex().nullish(),
      choice: choices.nullish(),
      grammar: grammar().nullish(),
      json_object: flag(),
      structural_tag: text('a structural tag (its JSON text)').nullish(),
      disable_fallback: flag(),
      disable_any_whitespace: flag(),
      disable_additional_properties: flag(),
      whitespace_pattern: regex().nullish(),
    },
    expect('an object ({"choice": […]}, {"json": {…}}, {"regex": "…"}…)'),
  )
  .check((ctx) => {
    const named = STRUCTURED_KINDS.filter((k) => ctx.value[k] != null && ctx.value[k] !== false);
    if (named.length === 1) return;
    ctx.issues.push({
      code: 'custom',
      path: named.length === 0 ? [] : [named[1]],
      input: named.length === 0 ? ctx.value : ctx.value[named[1]],
      message:
        named.length === 0
          ? `one of ${STRUCTURED_KINDS.join(', ')}`
          : `absent beside ${named[0]} (one kind of constraint per reply)`,
    });
  });

/** vLLM's older fields for the same constraints, which fleets on older releases still take. */
const GUIDED = ['guided_json', 'guided_regex', 'guided_choice', 'guided_grammar'] as const;

export const constraintFields = {
  response_format: responseFormat.nullish(),
  structured_outputs: structuredOutputs.nullish(),
  guided_json: schema.nullish(),
  guided_regex: regex().nullish(),
  guided_choice: choices.nullish(),
  guided_grammar: grammar().nullish(),
  guided_whitespace_pattern: regex().nullish(),
  guided_decoding_backend: text('a backend name (a string)').nullish(),
};

type ConstraintFields = {
  readonly [K in keyof typeof constraintFields]?: z.output<(typeof constraintFields)[K]>;
};

/** The fields of `req` that hold its reply to a form, in the order vLLM's rules name them. */
export function constraintsOf(req: ConstraintFields): string[] {
  const named: string[] = [];
  if (req.response_format != null && req.response_format.type !== 'text')
    named.push('response_format');
  if (req.structured_outputs != null) named.push('structured_outputs');
  for (const f of GUIDED) if (req[f] != null) named.push(f);
  return named;
}

/**
 * vLLM's rules across the constraint fields, for `.check()` on a request schema: one constraint
 * per reply, and none beside a tool call required (vLLM decodes that call under a constraint of
 * its own).
 */
export function checkConstraints(
  ctx: z.core.ParsePayload<ConstraintFields & { readonly tool_choice?: unknown }>,
): void {
  const req = ctx.value;
  const named = constraintsOf(req);
  if (named.length > 1) {
    ctx.issues.push({
      code: 'custom',
      path: [named[1]],
      input: (req as Record<string, unknown>)[named[1]],
      message: `absent beside ${named[0]} (one constraint per reply)`,
    });
  }
  const choice = req.tool_choice;
  if (named.length > 0 && choice != null && choice !== 'none' && choice !== 'auto') {
    ctx.issues.push({
      code: 'custom',
      path: ['tool_choice'],
      input: choice,
      message: `"none", "auto" or absent beside ${named[0]} (a reply held to a form is no tool call)`,
    });
  }
}

/**
 * For a server whose replies follow no form (a simulated engine's filler text): a request that
 * holds its reply to one is a 400 naming the field, never a reply that ignores what was asked.
 */
export function unconstrainedOnly(req: ConstraintFields, server: string): void {
  const field = constraintsOf(req)[0];
  if (field === undefined) return;
  const neutral = field === 'response_format' ? '{"type":"text"} or absent' : 'absent';
  const value = (req as Record<string, unknown>)[field];
  throw invalidRequest(
    `${field}: not supported by ${server} (expected ${neutral}), got ${describeValue(value)}`,
    field,
  );
}
