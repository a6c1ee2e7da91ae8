/**
 * Turns schema failures into Goodput's ConfigError: the dotted path of the first bad value,
 * what was expected and what was found — `routing.type: expected one of round-robin, least-request, got "fastest"`.
 * An unknown key is named by the map it sits in, with the keys that map takes:
 * `admission: expected a key among type, gates, retry_after, got "gate"` — never the whole map.
 */
import { z } from 'zod';
import { ConfigError } from '../errors.ts';

export function parseOrThrow<T>(schema: z.ZodType<T>, input: unknown, root = ''): T {
  refuseProtoKeys(input, root);
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = [root, ...issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))]
    .filter((p) => p !== '')
    .join('.')
    .replace(/\.\[/g, '[');
  if (issue.code === 'unrecognized_keys') {
    const known = knownKeys(schema, input, issue.path);
    const keys = issue.keys.length === 1 ? issue.keys[0] : issue.keys;
    const expected =
      known === undefined
        ? 'no unknown keys'
        : `${issue.keys.length === 1 ? 'a key' : 'keys'} among ${known.join(', ')}`;
    throw new ConfigError(path || '(root)', expected, keys);
  }
  throw new ConfigError(path || '(root)', expectation(issue), valueAt(input, issue.path));
}

function expectation(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_value':
      return `one of ${issue.values.map(String).join(', ')}`;
    case 'too_small':
      if (issue.origin === 'array') return `at least ${count(issue.minimum, 'entry', 'entries')}`;
      if (issue.origin === 'string')
        return `at least ${count(issue.minimum, 'character', 'characters')}`;
      return `a number ${issue.inclusive === false ? '>' : '≥'} ${String(issue.minimum)}`;
    case 'too_big':
      return `a number ${issue.inclusive === false ? '<' : '≤'} ${String(issue.maximum)}`;
    case 'invalid_type':
      return issue.expected === 'int' ? 'an integer' : withArticle(issue.expected);
    case 'invalid_union': {
      const options = (issue as { options?: readonly unknown[] }).options;
      if (options !== undefined) return `one of ${options.map(String).join(', ')}`;
      return unionForms(issue.errors) ?? 'a known type';
    }
    default:
      return issue.message;
  }
}

/**
 * What either branch of a union takes, where the value is wrong for each as a whole (`false or
 * an object`); undefined where a branch took its type and failed within (that error says more).
 */
function unionForms(branches: readonly (readonly z.core.$ZodIssue[])[]): string | undefined {
  const forms: string[] = [];
  for (const [first] of branches) {
    if (first === undefined || first.path.length > 0) return undefined;
    if (first.code !== 'invalid_type' && first.code !== 'invalid_value') return undefined;
    const form = expectation(first).replace(/^one of /, '');
    if (!forms.includes(form)) forms.push(form);
  }
  return forms.length === 0 ? undefined : forms.join(' or ');
}

function withArticle(noun: string): string {
  return `${/^[aeiou]/i.test(noun) ? 'an' : 'a'} ${noun}`;
}

function count(n: number | bigint, one: string, many: string): string {
  return `${String(n)} ${n === 1 ? one : many}`;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = input;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

/**
 * The keys the object schema at `path` takes, walking `input` beside it to choose among a
 * union's options (the one whose literal fields, such as a `type`, the value matches);
 * undefined where the walk meets a schema it does not know.
 */
function knownKeys(
  schema: z.ZodType,
  input: unknown,
  path: readonly PropertyKey[],
): string[] | undefined {
  const s = unwrapped(schema);
  if (s instanceof z.ZodUnion) {
    const options = (s.options as z.ZodType[]).filter((o) => literalsMatch(o, input));
    for (const option of options) {
      const keys = knownKeys(option, input, path);
      if (keys !== undefined) return keys;
    }
    return undefined;
  }
  if (path.length === 0) {
    if (s instanceof z.ZodObject) return Object.keys(s.shape);
    // A record keyed by an enum (`classes`, `estimate.by_class`) takes the enum's names.
    if (s instanceof z.ZodRecord && s.keyType instanceof z.ZodEnum)
      return s.keyType.options.map(String);
    return undefined;
  }
  const [key, ...rest] = path;
  const value = typeof input === 'object' && input !== null ? Reflect.get(input, key) : undefined;
  if (s instanceof z.ZodObject && typeof key === 'string' && Object.hasOwn(s.shape, key)) {
    return knownKeys(s.shape[key] as z.ZodType, value, rest);
  }
  if (s instanceof z.ZodArray) return knownKeys(s.element as z.ZodType, value, rest);
  if (s instanceof z.ZodRecord) return knownKeys(s.valueType as z.ZodType, value, rest);
  return undefined;
}

/** The schema under its optional, nullable and default wrappers. */
function unwrapped(schema: z.ZodType): z.ZodType {
  let s = schema;
  while (s instanceof z.ZodOptional || s instanceof z.ZodNullable || s instanceof z.ZodDefault) {
    s = s.unwrap() as z.ZodType;
  }
  return s;
}

/** Whether `input` could be the object `option` describes, by its literal fields alone. */
function literalsMatch(option: z.ZodType, input: unknown): boolean {
  const s = unwrapped(option);
  if (!(s instanceof z.ZodObject)) return true;
  if (typeof input !== 'object' || input === null) return false;
  return Object.entries(s.shape as Record<string, z.ZodType>).every(
    ([k, field]) =>
      !(field instanceof z.ZodLiteral) || field.safeParse(Reflect.get(input, k)).success,
  );
}

/**
 * A key `__proto__` (a YAML or JSON document may hold one as its own) is refused wherever it is:
 * a schema's record would pass over it in silence, so a class or tenant of that name would vanish.
 */
function refuseProtoKeys(value: unknown, path: string): void {
  if (typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    value.forEach((v, i) => refuseProtoKeys(v, `${path}[${i}]`));
    return;
  }
  if (Object.hasOwn(value, '__proto__')) {
    throw new ConfigError(path === '' ? '(root)' : path, 'no key named __proto__', '__proto__');
  }
  for (const [k, v] of Object.entries(value)) refuseProtoKeys(v, path === '' ? k : `${path}.${k}`);
}
