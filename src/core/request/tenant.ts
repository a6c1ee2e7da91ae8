/**
 * A tenant as the policy defines it: who may ask for what, and how much. A tenant never sets its
 * own priority: the classes it may use are granted here, and a request may only ask for one of
 * them. Quotas are per tenant and windowed (token buckets that refill continuously).
 */
import type { Ms, Tokens } from './units.ts';
import type { SloClassName } from './slo-classes.ts';

export interface TenantQuotas {
  /** Bucket refill window: each limit below is "per `windowMs`". */
  readonly windowMs: Ms;
  /** Weighted tokens (input + output) per window. */
  readonly tokensPerWindow?: Tokens;
  /** Requests admitted per window (OpenAI's RPM, with a window of a minute). */
  readonly requestsPerWindow?: number;
  /** Predicted GPU milliseconds per window. */
  readonly gpuMsPerWindow?: Ms;
  readonly maxConcurrentRequests?: number;
  readonly maxConcurrentSessions?: number;
}

/** Budget of one agent tree (all requests sharing a `rootId`), drawn on by every child. */
export interface RootBudget {
  /** Input + output tokens across the whole tree. */
  readonly maxTokens?: Tokens;
  /** Child requests (the root itself not counted). */
  readonly maxBranches?: number;
  /** Wall-clock deadline of the tree, from the root's arrival. */
  readonly maxWallMs?: Ms;
}

export interface TenantPolicy {
  readonly name: string;
  /** Fair-share weight (used by fair queueing). */
  readonly weight: number;
  /** Classes the tenant may ask for. */
  readonly classes: readonly SloClassName[];
  /**
   * The served models it may ask for, by the name clients send (the base model, its LoRA
   * adapters); undefined: every one. Another tenant's adapter is, to it, a model that does not
   * exist.
   */
  readonly models?: readonly string[];
  readonly streamAllowed: boolean;
  readonly quotas: TenantQuotas;
  readonly rootBudget?: RootBudget;
  /** Retries allowed as a fraction of the tenant's recent first attempts (server-side retry budget). */
  readonly retryBudgetRatio: number;
  /** SHA-256 digests (hex) of the API keys that authenticate as this tenant. */
  readonly apiKeySha256: readonly string[];
  /** The class of a request that asks for none. */
  readonly defaultClass: SloClassName;
  /**
   * `admin`: its requests wait in a lane of their own, served before every band (operators'
   * and safety traffic: a health probe, a moderation call); `normal`: its class's band.
   */
  readonly lane: 'normal' | 'admin';
}

export const DEFAULT_TENANT: Omit<TenantPolicy, 'name'> = {
  weight: 1,
  classes: ['interactive', 'reasoning', 'batch', 'best_effort'],
  streamAllowed: true,
  quotas: { windowMs: 60_000 },
  retryBudgetRatio: 0.2,
  apiKeySha256: [],
  defaultClass: 'interactive',
  lane: 'normal',
};
