/**
 * The `resilience` section of a policy: how the host treats the backends behind it. A circuit
 * breaker per backend (Envoy's outlier detection, cockatiel's breaker): `consecutive_failures`
 * failures in a row — transport errors, 5xx answers, streams that broke — take the backend out
 * of the fleet for `open_ms`, then one probe request decides whether it comes back. A request
 * that fails before its first token is tried on another backend, `upstream_attempts` times in
 * all, while its deadline allows. While the gateway's own event loop lags by more than
 * `shed_lag_ms` (smoothed), it refuses new requests on arrival — 503 `gateway_overloaded` —
 * instead of spending its CPU deciding each one (0: never).
 */
import { z } from 'zod';
import type { Ms } from '../request/units.ts';

export const resilienceSchema = z
  .object({
    circuit_breaker: z
      .object({
        consecutive_failures: z.int().min(1).optional(),
        open_ms: z.number().min(1).optional(),
      })
      .strict()
      .optional(),
    upstream_attempts: z.int().min(1).max(10).optional(),
    shed_lag_ms: z.number().min(0).optional(),
  })
  .strict();

/**
 * A gateway whose event loop runs this late adds as much to every request's TTFT (its own
 * overhead budget is about a millisecond): past it, new requests are shed on arrival.
 */
export const DEFAULT_SHED_LAG_MS: Ms = 50;

export interface ResilienceConfig {
  readonly breaker: { readonly failures: number; readonly openMs: Ms };
  readonly upstreamAttempts: number;
  /** Event-loop lag above which the gateway sheds new requests on arrival; 0: never. */
  readonly shedLagMs: Ms;
}

export function resolveResilience(
  r: z.infer<typeof resilienceSchema> | undefined,
): ResilienceConfig {
  return {
    breaker: {
      failures: r?.circuit_breaker?.consecutive_failures ?? 3,
      openMs: r?.circuit_breaker?.open_ms ?? 5_000,
    },
    upstreamAttempts: r?.upstream_attempts ?? 2,
    shedLagMs: r?.shed_lag_ms ?? DEFAULT_SHED_LAG_MS,
  };
}
