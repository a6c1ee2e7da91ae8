/**
 * The contract gate: is this request allowed at all? Known tenant; a class the tenant is
 * granted (a request may ask for a granted class, never promote itself); a model and adapter
 * the fleet serves, and the tenant may use (to a tenant, a model it may not use is one that does
 * not exist: `unknown_model`, as OpenAI answers both); streaming only where allowed; prompt plus requested output within the
 * context window (an estimated prompt: what it is sure to be) and the class's output budget. Failures are the client's to fix, so they carry
 * a 4xx status and no Retry-After.
 */
import { PASS, type GateInput, type GateVerdict } from './gate.ts';
import { type ContextOverflow, type RejectReason, type RejectStatus } from '../request/decision.ts';
import type { TenantPolicy } from '../request/tenant.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';

export const CONTRACT_GATE = 'contract';

const fail = (reason: RejectReason, status: RejectStatus): GateVerdict => ({
  pass: false,
  reason,
  status,
});

const tooLong = (context: ContextOverflow): GateVerdict => ({
  pass: false,
  reason: 'context_length',
  status: 400,
  context,
});

/** The sizes behind a context-window refusal: `prompt` is what the request is sure to be. */
function overflow(
  req: GateInput['req'],
  prompt: number,
  limitTokens: number,
  outputTokens?: number,
): ContextOverflow {
  return {
    promptTokens: prompt,
    ...(req.inputTokensAtLeast === undefined ? {} : { promptAtLeast: true }),
    ...(outputTokens === undefined ? {} : { outputTokens }),
    limitTokens,
    limit: 'context_window',
  };
}

/** What the contract gate reads: the request, its class and tenant, and what the fleet serves. */
export type ContractInput = Pick<GateInput, 'req' | 'cls' | 'tenant'> & {
  readonly fleet: { readonly spec: FleetSpec };
};

export function checkContract({ req, tenant, cls, fleet }: ContractInput): GateVerdict {
  const spec = fleet.spec;
  if (tenant === undefined) return fail('unknown_tenant', 403);
  if (!tenant.classes.includes(req.sloClass)) return fail('class_not_granted', 403);
  if (req.model !== undefined && req.model !== spec.model) return fail('unknown_model', 404);
  if (req.adapter !== undefined && !spec.adapters.includes(req.adapter)) {
    return fail('unknown_adapter', 404);
  }
  if (!mayUse(tenant, req.adapter ?? spec.model)) return fail('unknown_model', 404);
  if (req.stream === true && !tenant.streamAllowed) return fail('stream_not_allowed', 403);
  // An estimated prompt is refused only on what it is sure to be.
  const prompt = req.inputTokensAtLeast ?? req.inputTokens;
  if (prompt >= spec.maxModelLen) return tooLong(overflow(req, prompt, spec.maxModelLen));
  if (req.maxTokens !== undefined) {
    if (prompt + req.maxTokens > spec.maxModelLen) {
      return tooLong(overflow(req, prompt, spec.maxModelLen, req.maxTokens));
    }
    if (cls.maxOutputTokens !== undefined && req.maxTokens > cls.maxOutputTokens) {
      return fail('output_limit', 400);
    }
  }
  return PASS;
}

/** Whether `tenant` may ask for the served model named `model` (a base model or an adapter). */
export function mayUse(tenant: TenantPolicy, model: string): boolean {
  return tenant.models === undefined || tenant.models.includes(model);
}

/** The served models `tenant` may use, in the order served (all of them for an unknown tenant). */
export function modelsOf(tenant: TenantPolicy | undefined, served: readonly string[]) {
  return tenant?.models === undefined ? served : served.filter((m) => mayUse(tenant, m));
}
