/**
 * The ticket an offered request gets once the door has not refused it: the request as admission
 * decided to serve it (degraded or as asked), its demand, its output lengths and cap, and the
 * band it waits in. Its rule: a ticket starts queued with no deadline and no replica — the
 * pipeline alone then defers or enqueues it and sets when it expires.
 */
import type { AdmissionContext } from './admission.ts';
import type { ResolvedPolicy } from '../config/policy.ts';
import { lookupTenant } from '../config/tenant-schema.ts';
import type { AdmissionDecision } from '../request/decision.ts';
import { reservedKvTokens, type Demand } from '../request/demand.ts';
import type { LlmRequest } from '../request/request.ts';
import type { SloClass } from '../request/slo-classes.ts';
import type { Ms } from '../request/units.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';
import { ADMIN_BAND, type Ticket } from '../queueing/ticket.ts';
import { outputCap } from '../estimate/estimator.ts';
import type { OutputLengthModel } from '../estimate/output-length-model.ts';

/** What a pipeline fixes for every ticket it opens. */
export interface TicketTerms {
  readonly policy: ResolvedPolicy;
  /** The policy's revision, then each reload's (`Pipeline.retenant`). */
  readonly revision: string;
  readonly spec: FleetSpec;
  readonly outputs: OutputLengthModel;
  /**
   * A request admission did not assess still gets the full estimate: decision records are
   * wanted, or its dispatch queues (any but `immediate`).
   */
  readonly fullEstimate: boolean;
}

export function offerTicket<H>(
  terms: TicketTerms,
  asked: LlmRequest,
  handle: H,
  cls: SloClass,
  decision: AdmissionDecision,
  nowMs: Ms,
  avoid: number,
  ctx: AdmissionContext,
): Ticket<H> {
  const req = served(asked, decision);
  return {
    handle,
    req,
    asked,
    cls,
    revision: terms.revision,
    decision,
    demand: decision.assessment?.demand ?? baseDemand(terms, req, cls, ctx),
    state: 'queued',
    queued: false,
    offeredMs: nowMs,
    expiresMs: Infinity,
    wasDeferred: false,
    long: false,
    gapShare: 0,
    lengths: terms.outputs.distribution(cls.name, req.tenant, req.reasoningEffort),
    capTokens: outputCap(req, cls, terms.spec.maxModelLen),
    replica: -1,
    avoid,
    dispatchedMs: -1,
    hitTokens: 0,
    entry: null,
    queueCost: 0,
    chargedTokens: 0,
    kvChargedMs: -1,
    account: null,
    band:
      lookupTenant(terms.policy.tenants, req.tenant)?.lane === 'admin' ? ADMIN_BAND : cls.priority,
  };
}

/** The request as admission decided to serve it. */
export function served(asked: LlmRequest, decision: AdmissionDecision): LlmRequest {
  if (decision.outcome !== 'admit' || decision.degradation === undefined) return asked;
  const d = decision.degradation;
  return {
    ...asked,
    maxTokens: d.maxTokens ?? asked.maxTokens,
    inputTokens: asked.inputTokens - (d.droppedInputTokens ?? 0),
    model: d.model ?? asked.model,
  };
}

/**
 * Demand for a request admission did not assess (the baselines admit without looking). Only
 * the output prediction is made — it is cheap and the report scores it; timings are left at 0
 * unless decision records are wanted, which then carry the full estimate.
 */
function baseDemand(
  terms: TicketTerms,
  req: LlmRequest,
  cls: SloClass,
  ctx: AdmissionContext,
): Demand {
  if (terms.fullEstimate) return ctx.estimate(req);
  const output = terms.outputs.predict(
    cls.name,
    req.tenant,
    outputCap(req, cls, terms.spec.maxModelLen),
    req.reasoningEffort,
  );
  const kvTokens = reservedKvTokens(req, output);
  return {
    inputTokens: req.inputTokens,
    prefixHitTokens: 0,
    prefillMs: 0,
    prefillSteps: 1,
    firstDecodeMs: 0,
    handoverMs: 0,
    output,
    kvTokens,
    kvBytes: kvTokens * terms.spec.kvBytesPerToken,
    workP90Ms: 0,
  };
}
