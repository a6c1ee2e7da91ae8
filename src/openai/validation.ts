/**
 * Turns zod validation failures into one OpenAI 400 error that names the field, what it must
 * be and what it was: `messages[0].role: expected one of system, developer, user, assistant, tool, got
 * "robot"`. Main rule: every leaf schema of the wire format carries its expectation as its
 * error (`expect('an integer ≥ 1')`), so the message never leaks zod's wording. An unknown
 * field reads `messages[0].foo: unknown field`; a refusal that is not an expectation (`not
 * supported by this server …`) is worded by its issue's params (`Wording`).
 */
import { z } from 'zod';
import { describeValue, invalidRequest } from './errors.ts';
import { fieldPath } from './field-path.ts';
import { checkJsonShape } from './json-shape.ts';

export { fieldPath };

/** Schema params that make `text` the schema's whole expectation, for every check it fails. */
export function expect(text: string): { error: string } {
  return { error: text };
}

/** How `parseWith` words a custom issue, carried in the issue's `params`. */
export interface Wording {
  /** The message stands alone (`only allowed when stream is true`), without `expected`. */
  readonly plain?: boolean;
  /** Shown after `got` instead of the value; null: no `got` part at all. */
  readonly got?: string | null;
}

/** Params for a check whose failure is worded as `text` rather than as an expectation. */
export function refusal(text: string, wording: Wording = {}) {
  return { error: text, params: { plain: true, ...wording } satisfies Wording };
}

/**
 * A string field: a string that is also well-formed Unicode. A lone surrogate (`"\ud800"` is
 * valid JSON) cannot be encoded as UTF-8, so an upstream would see a different string, or
 * refuse it after the gateway has already admitted and queued the request.
 */
export function text(expectation: string) {
  return z.string(expect(expectation)).refine((s) => s.isWellFormed(), {
    error: 'well-formed Unicode text',
    params: { got: 'a lone surrogate' } satisfies Wording,
  });
}

/** Whether `v` is an object with an own `__proto__` key, as JSON.parse makes from `"__proto__"`. */
export const hasProtoKey = (v: unknown): boolean =>
  typeof v === 'object' && v !== null && Object.hasOwn(v, '__proto__');

/** The issue of a `__proto__` key in a free-form object, at its path. */
export function protoKeyIssue(input: unknown): z.core.$ZodRawIssue {
  return {
    code: 'custom',
    path: ['__proto__'],
    input,
    message: 'a key other than __proto__ (it would be lost on the way upstream)',
    params: { got: null } satisfies Wording,
  };
}

/**
 * A free-form JSON object (a JSON schema, a chat template's arguments), passed on as sent. Its
 * own `__proto__` key is refused by name: a record drops it, and what went upstream would then
 * not be what the client sent.
 */
export function jsonObject(expectation: string) {
  return z
    .unknown()
    .check((ctx) => {
      if (hasProtoKey(ctx.value)) ctx.issues.push(protoKeyIssue(ctx.value));
    })
    .pipe(z.record(z.string(), z.unknown(), expect(expectation)));
}

/** A boolean field, null or absent as absent. */
export const flag = () => z.boolean(expect('a boolean')).nullish();

/** Well-formed text, as `text` checks it: `listOf`'s quick test of a string element. */
export const isText = (v: unknown): v is string => typeof v === 'string' && v.isWellFormed();

/** A JSON object: not null, not an array. */
export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * An array of at least `min` elements of `element`, checked in one plain loop: `ok` passes the
 * good ones, and the first it does not is judged by `element`, whose issues name it. zod's own
 * array reports an issue per bad element, and inside a union for every form tried: a body of a
 * million elements (4 MiB) cost one event loop seconds to accept or refuse, and this
 * milliseconds. `ok` must accept exactly what `element` does.
 */
export function listOf<T>(
  ok: (v: unknown) => v is T,
  element: z.ZodType<T>,
  expectation: string,
  min = 0,
) {
  return z
    .custom<T[]>((v) => Array.isArray(v) && v.length >= min, expect(expectation))
    .check((ctx) => {
      const list = ctx.value;
      for (let i = 0; i < list.length; i++) {
        if (ok(list[i])) continue;
        const judged = element.safeParse(list[i], { reportInput: true });
        if (judged.success) continue;
        for (const issue of judged.error.issues) ctx.issues.push(relayed(issue, [i]));
        return;
      }
    });
}

/**
 * A list of `element`s judged as `listOf` judges one, for elements with no plain test of their
 * own: the first bad element named, not each (a body of 350,000 bad tools cost zod's own array
 * 1.2 s of the event loop to refuse). `quick` passes the commonest forms without zod, which
 * costs several times a plain test of their fields.
 */
export function judgedList<T>(
  element: z.ZodType<T>,
  expectation: string,
  min = 0,
  quick: (v: unknown) => boolean = () => false,
) {
  return listOf(
    (v: unknown): v is T => quick(v) || element.safeParse(v).success,
    element,
    expectation,
    min,
  );
}

/** An issue of a value judged on its own, as one of the field it sits at `under`. */
function relayed(issue: z.core.$ZodIssue, under: PropertyKey[]): z.core.$ZodRawIssue {
  return { ...issue, path: [...under, ...issue.path] } as z.core.$ZodRawIssue;
}

/**
 * A field of several forms, judged by the one `pick` chooses from its value's shape (none:
 * `expectation`), so a bad value is named as its own form would name it, and no other form is
 * tried on it.
 */
export function byForm<T>(pick: (v: unknown) => z.ZodType<T> | undefined, expectation: string) {
  return z
    .custom<T>((v) => pick(v) !== undefined, expect(expectation))
    .check((ctx) => {
      const judged = (pick(ctx.value) as z.ZodType<T>).safeParse(ctx.value, { reportInput: true });
      if (judged.success) return;
      for (const issue of judged.error.issues) ctx.issues.push(relayed(issue, []));
    });
}

interface Problem {
  readonly message: string;
  readonly param: string | null;
}

function problems(issue: z.core.$ZodIssue): Problem[] {
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => {
      const at = fieldPath([...issue.path, cut(key)]);
      return { message: `${at}: unknown field`, param: at };
    });
  }
  const wording: Wording = (issue.code === 'custom' ? issue.params : undefined) ?? {};
  const input = 'input' in issue ? issue.input : undefined;
  const got = wording.got === undefined ? describeValue(input) : wording.got;
  const at = fieldPath(issue.path);
  const what = wording.plain === true ? issue.message : `expected ${issue.message}`;
  const message = got === null ? `${at}: ${what}` : `${at}: ${what}, got ${got}`;
  return [{ message, param: issue.path.length === 0 ? null : at }];
}

/** Problems an error message lists; past them it says how many more there were. */
const LISTED_PROBLEMS = 5;
/** The longest field name a message repeats: a key is client input, and may be megabytes. */
const KEY_CHARS = 64;

function cut(key: string): string {
  return key.length > KEY_CHARS ? `${key.slice(0, KEY_CHARS)}…` : key;
}

/**
 * Parses `body` or throws a 400 naming the first bad field; the next few follow in the message,
 * then how many more there were, so a body of many errors gets a message of bounded size.
 */
export function parseWith<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const result = schema.safeParse(body, { reportInput: true });
  if (result.success) return result.data;
  const issues = result.error.issues;
  const listed = issues.slice(0, LISTED_PROBLEMS).flatMap(problems);
  // One value may fail two checks worded alike (1e300 is neither a safe integer nor ≤ the
  // maximum): each problem is said once.
  const shown = [...new Map(listed.map((p) => [p.message, p])).values()].slice(0, LISTED_PROBLEMS);
  const said = new Set(shown.map((p) => p.message));
  const hidden = issues.reduce(
    (n, i) => n + (i.code === 'unrecognized_keys' ? i.keys.length : 1),
    -listed.filter((p) => said.has(p.message)).length,
  );
  const more = hidden > 0 ? `; and ${hidden} more` : '';
  const message = shown.map((p) => p.message).join('; ') + more;
  throw invalidRequest(message, shown[0].param, 'invalid_value');
}

/**
 * A list field of more than `max` elements refused before the schema judges it: a body of
 * 100,000 bad elements would cost seconds of validation to refuse.
 */
export function refuseLongList(body: unknown, field: string, max: number, noun: string): void {
  const list = (body as Record<string, unknown> | null)?.[field];
  if (Array.isArray(list) && list.length > max) {
    throwInvalid(`${field}: expected at most ${max} ${noun}, got ${list.length}`, field);
  }
}

function throwInvalid(message: string, param: string | null): never {
  throw invalidRequest(message, param, 'invalid_value');
}

/**
 * A request body's text as JSON, or a 400 that says why it is not: not JSON, nested deeper than
 * `MAX_JSON_DEPTH`, or an object with a duplicate key (see json-shape.ts). Decode the bytes with
 * `decodeUtf8` first, so invalid UTF-8 is refused rather than replaced.
 */
export function parseJsonText(text: string): unknown {
  if (text.trim() === '') throwInvalid('request body: expected a JSON object, got nothing', null);
  checkJsonShape(text);
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    return throwInvalid(
      `request body: expected valid JSON, got ${describeValue(text, 40)} (${why})`,
      null,
    );
  }
}
