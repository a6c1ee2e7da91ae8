/**
 * Writes profile JSON for people as well as programs: objects indented, arrays of numbers on
 * one line, so a table reads as a row and diffs stay small when a fit changes.
 */

/** Objects whose one-line form is at most this long stay on one line (check points, tails). */
const INLINE = 160;

export function formatJson(value: unknown, indent = ''): string {
  const inner = indent + '  ';
  const flat = JSON.stringify(value);
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && flat.length <= INLINE)
    return flat;
  if (Array.isArray(value)) {
    if (value.every((v) => typeof v === 'number' || typeof v === 'string')) return flat;
    return `[\n${value.map((v) => inner + formatJson(v, inner)).join(',\n')}\n${indent}]`;
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return '{}';
    return `{\n${entries.map(([k, v]) => `${inner}${JSON.stringify(k)}: ${formatJson(v, inner)}`).join(',\n')}\n${indent}}`;
  }
  return JSON.stringify(value);
}
