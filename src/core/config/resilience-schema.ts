/**
 * The `resilience` section of a policy: how the host treats the backends behind it. A circuit
 * breaker per backend (Envoy's outlier detection, cockatiel's breaker): `consecutive_failures`
 * failures in a row — transport errors, 5xx answers, streams that broke — take the backend out
 * of the fleet for `open_ms`, then one probe request decides whether it comes back. A request
 * that fails before its first token is tried on another backend, `upstream_attempts` times in
 * all, while its deadline allows.
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
  })
  .strict();

export interface ResilienceConfig {
  readonly breaker: { readonly failures: number; readonly openMs: Ms };
  readonly upstreamAttempts: number;
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
  };
}
