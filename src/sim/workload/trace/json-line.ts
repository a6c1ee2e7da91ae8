/**
 * One JSON Lines record: each non-blank line must be a JSON object. Shared by the JSONL formats
 * so a broken line reads the same whichever format it is in.
 */
import { fail, type LineRef } from './fields.ts';

export type JsonRecord = Readonly<Record<string, unknown>>;

/** The object on `line`, or undefined when the line is not a JSON object (for detection). */
export function tryJsonObject(line: string): JsonRecord | undefined {
  if (!line.trimStart().startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

export function jsonObject(at: LineRef, line: string): JsonRecord {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (e) {
    fail(at, 'json', `not valid JSON (${(e as Error).message})`);
  }
  if (!isRecord(value)) fail(at, 'json', 'expected a JSON object per line');
  return value;
}

function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
