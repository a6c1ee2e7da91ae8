/**
 * The `resilience` section of a policy: how the host treats the backends behind it. A circuit
 * breaker per backend (Envoy's outlier detection, cockatiel's breaker): `consecutive_failures`
 * failures in a row — transport errors, 5xx answers, streams that broke — take the backend out
 * of the fleet for `open_ms`, then one probe request decides whether it comes back. A request
 * that fails before its first token is tried on another backend, `upstream_attempts` times in
 * all, while its deadline allows. While the gateway's own event loop lags by more than
 * `shed_lag_ms` (smoothed), it refuses new requests on arrival — 503 `gateway_overloaded` —
 * instead of spending its CPU deciding each one (0: never). While streams with a token-gap
 * objective are running, a lag sustained over about a second past `shed_gap_ratio` of the
 * tightest one sheds too: the gateway's lateness is added to every gap its clients see, so past
 * that share it stops taking new streams before the admitted ones miss their objective (0: the
 * threshold alone). Flow control leaves the same share of every gap objective free of engine
 * steps (`../dispatch/README.md`), in the simulator too.
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
    shed_gap_ratio: z.number().min(0).max(1).optional(),
  })
  .strict();

/**
 * A gateway whose event loop runs this late adds as much to every request's TTFT (its own
 * overhead budget is about a millisecond): past it, new requests are shed on arrival.
 */
export const DEFAULT_SHED_LAG_MS: Ms = 50;

/**
 * 0.15 of the tightest running stream's gap objective (12 ms of 80). On a gateway relaying its
 * embedded fleet's streams to a Gamma flood at 237 req/s (bench/RESULTS.md, "Live admission"),
 * every admitted stream stayed within its objective at 0.15 and 99–100% at an eighth and a
 * sixth; a fixed 20 ms let 13–23% miss, the 50 ms threshold alone 63–80%.
 */
export const DEFAULT_SHED_GAP_RATIO = 0.15;

export interface ResilienceConfig {
  readonly breaker: { readonly failures: number; readonly openMs: Ms };
  readonly upstreamAttempts: number;
  /** Event-loop lag above which the gateway sheds new requests on arrival; 0: never. */
  readonly shedLagMs: Ms;
  /** While streams with a gap objective run, the lag threshold is at most this share of the tightest. */
  readonly shedGapRatio: number;
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
    shedGapRatio: r?.shed_gap_ratio ?? DEFAULT_SHED_GAP_RATIO,
  };
}
