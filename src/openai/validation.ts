/**
 * Turns zod validation failures into one OpenAI 400 error that names the field, what it must
 * be and what it was: `messages[0].role: expected one of system, user, assistant, tool, got
 * "robot"`. Main rule: every leaf schema of the wire format carries its expectation as its
 * error (`expect('an integer ≥ 1')`), so the message never leaks zod's wording.
 */
import type { z } from 'zod';
import { describeValue, invalidRequest } from './errors.ts';

/** Schema params that make `text` the schema's whole expectation, for every check it fails. */
export function expect(text: string): { error: string } {
  return { error: text };
}

/** `['messages', 0, 'role']` → `messages[0].role`; the root is `body`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out === '' ? 'body' : out;
}

/** Parses `body` or throws a 400 naming the first bad field (the others follow in the message). */
export function parseWith<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const result = schema.safeParse(body, { reportInput: true });
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const input = 'input' in issue ? issue.input : undefined;
    return `${fieldPath(issue.path)}: expected ${issue.message}, got ${describeValue(input)}`;
  });
  const first = result.error.issues[0];
  return throwInvalid(problems.join('; '), first.path.length === 0 ? null : fieldPath(first.path));
}

function throwInvalid(message: string, param: string | null): never {
  throw invalidRequest(message, param, 'invalid_value');
}

/** A request body's text as JSON, or a 400 that says why it is not. */
export function parseJsonText(text: string): unknown {
  if (text.trim() === '') throwInvalid('request body: expected a JSON object, got nothing', null);
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
