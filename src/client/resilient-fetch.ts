/**
 * The client's half of the overload contract, as a `fetch` for the official `openai` client:
 * one idempotency key and one absolute deadline for every attempt of a request; retries only
 * where retrying can help (429, 503, 502/504, a connection that failed before any response) and
 * the server has not said it cannot (`x-should-retry: false`), after exponential backoff with
 * full jitter and never sooner than the server's Retry-After (`retry-after-ms` read first);
 * at most `maxAttempts`, and only while the client's own retry budget (a fraction of its first
 * attempts) allows; never a retry once a response — a stream that may already have produced
 * tokens — came back; and a circuit breaker per endpoint that stops sending to one that keeps
 * failing. Usage:
 *
 *   const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, fetch: resilientFetch() });
 */
import type { Clock } from '../core/ports/clock.ts';
import type { Rng } from '../core/ports/rng.ts';
import type { Timers } from '../core/ports/timers.ts';
import type { Ms } from '../core/request/units.ts';
import { entropyRng, randomId } from '../runtime/entropy-rng.ts';
import { epochMs as wallEpochMs, wallClock } from '../runtime/wall-clock.ts';
import { wallTimers } from '../runtime/wall-timers.ts';
import { CircuitBreaker } from '../core/resilience/circuit-breaker.ts';
import { fullJitterBackoffMs } from '../core/resilience/backoff.ts';
import { parseRetryAfter } from '../core/resilience/retry-after.ts';

export interface ResilientFetchOptions {
  readonly maxAttempts?: number;
  readonly backoffBaseMs?: Ms;
  readonly backoffCapMs?: Ms;
  /** Retries allowed per first attempt, over the client's lifetime (plus `minRetries`). */
  readonly retryBudgetRatio?: number;
  readonly minRetries?: number;
  /** Default request deadline when the caller sets none (sent as `x-goodput-deadline-ms`). */
  readonly timeoutMs?: Ms;
  readonly fetch?: typeof fetch;
  readonly clock?: Clock;
  readonly timers?: Timers;
  readonly rng?: Rng;
  /** Unix epoch ms now, for the absolute deadline header (the wall clock by default). */
  readonly epochMs?: () => number;
}

const RETRYABLE = new Set([429, 502, 503, 504]);

export function resilientFetch(options: ResilientFetchOptions = {}): typeof fetch {
  const o = {
    maxAttempts: 4,
    backoffBaseMs: 250,
    backoffCapMs: 20_000,
    retryBudgetRatio: 0.2,
    minRetries: 10,
    timeoutMs: 60_000,
    ...options,
  };
  const doFetch = o.fetch ?? fetch;
  const clock = o.clock ?? wallClock;
  const timers = o.timers ?? wallTimers(clock);
  const rng = o.rng ?? entropyRng();
  const epochMs = o.epochMs ?? (() => Math.round(wallEpochMs()));
  const breakers = new Map<string, CircuitBreaker>();
  let firstAttempts = 0;
  let retries = 0;

  const sleep = (ms: Ms, signal: AbortSignal | null | undefined) =>
    new Promise<void>((resolve, reject) => {
      const t = timers.at(clock.now() + ms, resolve);
      signal?.addEventListener('abort', () => (t.cancel(), reject(signal.reason)), { once: true });
    });

  return async (input, init) => {
    const request = new Request(input, init);
    const endpoint = new URL(request.url).origin;
    let breaker = breakers.get(endpoint);
    if (breaker === undefined) breakers.set(endpoint, (breaker = new CircuitBreaker(clock)));
    const headers = new Headers(request.headers);
    if (!headers.has('idempotency-key')) headers.set('idempotency-key', randomId());
    if (!headers.has('x-goodput-deadline-ms')) {
      headers.set('x-goodput-deadline-ms', String(epochMs() + o.timeoutMs));
    }
    const body = request.body === null ? null : await request.arrayBuffer();
    firstAttempts++;
    for (let attempt = 1; ; attempt++) {
      headers.set('x-goodput-attempt', String(attempt));
      const last =
        attempt >= o.maxAttempts || retries >= o.minRetries + o.retryBudgetRatio * firstAttempts;
      let retryAfterMs: Ms | undefined;
      if (!breaker.allows()) {
        if (last)
          return Response.json(
            { error: { message: `circuit open for ${endpoint}` } },
            { status: 503 },
          );
      } else {
        try {
          const res = await doFetch(request.url, {
            method: request.method,
            headers,
            body,
            signal: init?.signal ?? request.signal,
          });
          // A response that came back is never retried past this point: a stream may have begun.
          // Nor is a refusal that says no retry can succeed (its deadline out of reach): a
          // deliberate answer, not an endpoint failing.
          const final = res.headers.get('x-should-retry') === 'false';
          if (final || !RETRYABLE.has(res.status) || last) {
            breaker.record(final || res.status < 500);
            return res;
          }
          breaker.record(res.status === 429);
          retryAfterMs =
            parseRetryAfterMs(res.headers.get('retry-after-ms')) ??
            parseRetryAfter(res.headers.get('retry-after'), res.headers.get('date'), epochMs());
          await res.body?.cancel();
        } catch (e) {
          if (init?.signal?.aborted || last) throw e;
          breaker.record(false);
        }
      }
      retries++;
      const delay = fullJitterBackoffMs(
        o.backoffBaseMs,
        o.backoffCapMs,
        attempt,
        rng.next(),
        retryAfterMs,
      );
      await sleep(delay, init?.signal);
    }
  };
}

/** `retry-after-ms`, the same wait to the millisecond (read first); undefined if absent. */
export function parseRetryAfterMs(value: string | null): Ms | undefined {
  if (value === null) return undefined;
  const ms = Number(value.trim());
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}
