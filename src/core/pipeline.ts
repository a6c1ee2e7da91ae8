/**
 * The one place the stage order is written: admit → (queue) → route. Each stage is a plugin
 * behind a small interface; the pipeline only sequences them and returns a decision, which the
 * simulator or the gateway applies. Queueing at the control plane comes with the fairness
 * work; until then admitted requests dispatch at once.
 */
import type { AdmissionDecision } from './admission/admission.ts';
import type { Admission } from './admission/admission.ts';
import type { LlmRequest } from './request/request.ts';
import type { Ms } from './request/units.ts';
import type { ReplicaSnapshot } from './routing/replica-snapshot.ts';
import type { Router } from './routing/router.ts';
import type { ResolvedPolicy } from './config/policy.ts';
import { ADMISSIONS } from './admission/registry.ts';
import { ROUTERS } from './routing/registry.ts';

export type Decision =
  | Extract<AdmissionDecision, { outcome: 'reject' }>
  | { readonly outcome: 'dispatch'; readonly replica: number };

export interface PipelineState {
  readonly admission: unknown;
  readonly routing: unknown;
}

export class Pipeline {
  readonly policy: ResolvedPolicy;
  private readonly admission: Admission;
  private readonly router: Router;
  private readonly state: PipelineState;

  constructor(policy: ResolvedPolicy) {
    this.policy = policy;
    this.admission = ADMISSIONS[policy.admission.type]();
    this.router = ROUTERS[policy.routing.type]();
    this.state = { admission: this.admission.initState(), routing: this.router.initState() };
  }

  /** `replicas` are the ready replicas; the decision's `replica` indexes into that list. */
  decide(req: LlmRequest, replicas: readonly ReplicaSnapshot[], nowMs: Ms): Decision {
    const admission = this.admission.decide(this.state.admission, req, { nowMs });
    if (admission.outcome === 'reject') return admission;
    if (replicas.length === 0) {
      return { outcome: 'reject', status: 503, reason: 'service_capacity', retryAfterMs: 1_000 };
    }
    return { outcome: 'dispatch', replica: this.router.pick(this.state.routing, req, replicas) };
  }
}
