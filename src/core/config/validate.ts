/**
 * Turns schema failures into Goodput's ConfigError: the dotted path of the first bad value,
 * what was expected and what was found — `routing.type: expected one of round-robin, least-request, got "fastest"`.
 */
import type { z } from 'zod';
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
      return `${issue.expected === 'int' ? 'an integer' : `a ${issue.expected}`}`;
    case 'unrecognized_keys':
      return `no unknown keys (${issue.keys.join(', ')})`;
    case 'invalid_union': {
      const options = (issue as { options?: readonly unknown[] }).options;
      return options === undefined ? 'a known type' : `one of ${options.map(String).join(', ')}`;
    }
    default:
      return issue.message;
  }
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
