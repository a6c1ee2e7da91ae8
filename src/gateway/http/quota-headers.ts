/**
 * OpenAI's rate-limit headers for a tenant's token quota, on every answer to a request of a
 * tenant that has one, admitted or refused at the door: `x-ratelimit-limit-tokens` (its tokens
 * a window), `x-ratelimit-remaining-tokens` (what is left after this request's charge — its
 * prompt and output cap, settled to what it used once it ends — or, refused, what there was)
 * and `x-ratelimit-reset-tokens` (until the quota is whole again, a duration as OpenAI writes
 * one: `6m0s`, `1.5s`, `120ms`). A client that paces itself by them (LiteLLM's router, say)
 * slows before it is refused. OpenAI's `-requests` headers count requests a minute; a tenant's
 * concurrency limit is another thing, and is not told as one.
 */
import type { TokenStanding } from '../../core/admission/budget/tenant-ledger.ts';
import type { Ms } from '../../core/request/units.ts';

const NONE: Readonly<Record<string, string>> = Object.freeze({});

/** The headers of `tokens`, a tenant's standing; none without one. */
export function quotaHeaders(tokens: TokenStanding | undefined): Readonly<Record<string, string>> {
  if (tokens === undefined) return NONE;
  return {
    'x-ratelimit-limit-tokens': String(tokens.limit),
    'x-ratelimit-remaining-tokens': String(tokens.remaining),
    'x-ratelimit-reset-tokens': durationText(tokens.resetMs),
  };
}

/** `headers` less those of a quota: a replay's, whose answer was charged when it was made. */
export function withoutQuota(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (!k.startsWith('x-ratelimit-')) out[k] = v;
  return out;
}

/** `ms` as OpenAI (and Go's `time.Duration`) writes a duration: `1h0m0s`, `6m0s`, `1.5s`, `120ms`. */
export function durationText(ms: Ms): string {
  const whole = Math.max(0, Math.ceil(ms));
  if (whole < 1_000) return `${whole}ms`;
  const h = Math.floor(whole / 3_600_000);
  const m = Math.floor((whole % 3_600_000) / 60_000);
  const s = `${(whole % 60_000) / 1_000}s`;
  if (h > 0) return `${h}h${m}m${s}`;
  return m > 0 ? `${m}m${s}` : s;
}
