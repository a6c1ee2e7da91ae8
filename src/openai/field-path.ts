/**
 * How every error of the wire format names a field: the path from the body's root, printed as
 * code reads it. Main rule: the root itself is `body`.
 */

/** `['messages', 0, 'role']` → `messages[0].role`; the root is `body`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out === '' ? 'body' : out;
}
