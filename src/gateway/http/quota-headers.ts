/**
 * OpenAI's rate-limit headers for a tenant's windowed quotas, on every answer to a request of a
 * tenant that has one, admitted or refused at the door. For its tokens: `x-ratelimit-limit-tokens`
 * (its tokens a window), `x-ratelimit-remaining-tokens` (what is left after this request's
 * charge — its prompt and output cap, settled to what it used once it ends — or, refused, what
 * there was) and `x-ratelimit-reset-tokens` (until the quota is whole again, a duration as
 * OpenAI writes one: `6m0s`, `1.5s`, `120ms`); for its requests (`requests_per_window`, OpenAI's
 * requests a minute when the window is one), the same three ending in `-requests`. A client that
 * paces itself by them (LiteLLM's router, say) slows before it is refused. A tenant's
 * concurrency limit is another thing, and is not told as one.
 */
import type { QuotaStanding, Standings } from '../../core/admission/budget/tenant-ledger.ts';
import type { Ms } from '../../core/request/units.ts';

const NONE: Readonly<Record<string, string>> = Object.freeze({});

/** The headers of a tenant's standings; none without one. */
export function quotaHeaders(standing: Standings | undefined): Readonly<Record<string, string>> {
  if (standing === undefined) return NONE;
  const { tokens, requests } = standing;
  if (requests === undefined) return tokens === undefined ? NONE : headersOf('tokens', tokens);
  const forRequests = headersOf('requests', requests);
  return tokens === undefined ? forRequests : { ...headersOf('tokens', tokens), ...forRequests };
}

function headersOf(unit: 'tokens' | 'requests', q: QuotaStanding): Record<string, string> {
  return {
    [`x-ratelimit-limit-${unit}`]: String(q.limit),
    [`x-ratelimit-remaining-${unit}`]: String(q.remaining),
    [`x-ratelimit-reset-${unit}`]: durationText(q.resetMs),
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
