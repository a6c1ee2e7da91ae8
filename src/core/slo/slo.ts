/**
 * An SLO as an object an operator writes down: which requests it covers (a population of class,
 * model and tenant, each absent meaning all), over what rolling window, the objectives it
 * promises (each a fraction of events that must be good), which requests it does not judge, and
 * the policy revision it was defined under. A class's objectives say what one request is owed;
 * an SLO says how often the service must deliver it, and so how much error budget it may spend.
 */
import type { SloClassName } from '../request/slo-classes.ts';
import type { Ms } from '../request/units.ts';

/**
 * Closed set, a metric label. `success`: the request completed (a refusal, expiry or failure is
 * bad). `ttft`: its first token within the threshold. `token_gap`: each gap between its tokens
 * within the threshold — the events are gaps, not requests. `e2e`: a completed request's last
 * token within the threshold.
 */
export const OBJECTIVE_KINDS = ['success', 'ttft', 'token_gap', 'e2e'] as const;
export type ObjectiveKind = (typeof OBJECTIVE_KINDS)[number];

/**
 * Requests an SLO may leave out, all of them the client's doing. Closed set.
 * - `client_closed_before_dispatch`: its client went away before a backend had it (uploading
 *   or waiting in the queue);
 * - `client_closed_streaming`: its client went away while it was being served;
 * - `client_error`: refused as not allowed — unknown tenant or model, class not granted, too
 *   long, an idempotency key in use or reused (4xx; retrying cannot help);
 * - `tenant_limits`: refused for its tenant's own limits — quotas, concurrency, root and retry
 *   budgets (429);
 * - `client_deadline`: its client's own deadline passed (`x-goodput-timeout-ms`).
 */
export const EXCLUSIONS = [
  'client_closed_before_dispatch',
  'client_closed_streaming',
  'client_error',
  'tenant_limits',
  'client_deadline',
] as const;
export type Exclusion = (typeof EXCLUSIONS)[number];

/** Who an SLO covers; an absent field covers every value. */
export interface Population {
  readonly class?: SloClassName;
  /** The model (or LoRA adapter) a request names. */
  readonly model?: string;
  readonly tenant?: string;
}

/** The objectives judged against a bound in milliseconds. */
export type LatencyKind = Exclude<ObjectiveKind, 'success'>;

interface ObjectiveBase {
  /** Unique within its SLO; the `objective` label. Defaults to the kind. */
  readonly name: string;
  /** Fraction of events that must be good, in (0, 1); 1 − target is the error budget. */
  readonly target: number;
}

export type Objective =
  | (ObjectiveBase & { readonly kind: 'success' })
  /** `thresholdMs`: the bound a good event stays within. */
  | (ObjectiveBase & { readonly kind: LatencyKind; readonly thresholdMs: Ms });

export interface SloDefinition {
  /** Unique within the policy; the `slo` label. */
  readonly name: string;
  readonly population: Population;
  /** The rolling window attainment and budget are judged over. */
  readonly windowMs: Ms;
  readonly objectives: readonly Objective[];
  readonly exclusions: readonly Exclusion[];
  /** The policy revision the SLO was defined under. */
  readonly revision: string;
}

/** The facts of a request an SLO's population is matched on. */
export interface Who {
  readonly sloClass: SloClassName;
  readonly model: string;
  readonly tenant: string;
}

export function covers(p: Population, who: Who): boolean {
  return (
    (p.class === undefined || p.class === who.sloClass) &&
    (p.model === undefined || p.model === who.model) &&
    (p.tenant === undefined || p.tenant === who.tenant)
  );
}
