/**
 * A server's Retry-After (RFC 9110 §10.2.3) as a wait in milliseconds: delta-seconds, or an
 * HTTP-date. A date is read against the same response's `Date` header — the server's own clock
 * on both sides, so a skewed local clock does not move the wait — or, where the response has
 * none, against `nowEpochMs` when the caller gives one. A date already past is a wait of 0.
 * Anything else (a negative, a word, a date that does not parse) is no Retry-After at all.
 */
import type { Ms } from '../request/units.ts';

export function parseRetryAfter(
  value: string | null | undefined,
  dateHeader?: string | null,
  nowEpochMs?: number,
): Ms | undefined {
  const text = value?.trim();
  if (text === undefined || text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  const at = httpDateMs(text);
  if (at === undefined) return undefined;
  const now = (dateHeader ? httpDateMs(dateHeader) : undefined) ?? nowEpochMs;
  return now === undefined ? undefined : Math.max(0, at - now);
}

/** IMF-fixdate and the obsolete forms `Date.parse` reads; only a string that names a weekday. */
function httpDateMs(text: string): number | undefined {
  if (!/^[A-Za-z]{3}/.test(text.trim())) return undefined;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : undefined;
}
