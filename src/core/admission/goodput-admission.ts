/**
 * Goodput's admission controller: the four gates in policy order, then the class's overload
 * behaviour. Contract and budget failures are final (the request or its tenant must change).
 * A capacity failure (memory or deadline) walks the class's degrade ladder — cap the output,
 * drop optional context, a smaller model, defer — taking the first rung under which the
 * request passes, and otherwise defers (classes that defer) or rejects with a Retry-After.
 * Classes that defer are admitted only when they can start now; otherwise they wait in the
 * deferred queue instead of holding reservations. Pure: the decision is computed from the
 * request, the fleet summary and budget state; state changes only in `commit` and `settle`.
 */
import type { AdmissionConfig } from '../config/stage-schema.ts';
import type { ResolvedPolicy } from '../config/policy.ts';
import { lookupTenant } from '../config/tenant-schema.ts';
import type { LlmRequest } from '../request/request.ts';
import type { DegradeStep, SloClass } from '../request/slo-classes.ts';
import type { Admission, AdmissionContext } from './admission.ts';
import type { AdmissionDecision, Assessment, Degradation, Rejection } from '../request/decision.ts';
import type { GateInput, GateVerdict } from './gate.ts';
import { budgetGate, type BudgetGate } from './budget/budget-gate.ts';
import { checkContract } from './contract-gate.ts';
import { checkMemory } from './memory-gate.ts';
import { drainRetryAfterMs } from './retry-after.ts';
import {
  assessDeadline,
  checkDeadline,
  checkLeastWait,
  type DeadlineView,
} from './deadline-gate.ts';

export const GOODPUT_ADMISSION = 'goodput';

type Config = Extract<AdmissionConfig, { type: 'goodput' }>;

interface Capacity {
  readonly verdict: GateVerdict;
  readonly view: DeadlineView;
}

/** Tenants' own limits that need the estimates (sessions, GPU time, agent trees). */
export interface GoodputAdmissionState {
  readonly budgets: BudgetGate;
}

export function goodputAdmission(policy: ResolvedPolicy): Admission<GoodputAdmissionState> {
  const cfg = policy.admission as Config;
  const on = (g: Config['gates'][number]) => cfg.gates.includes(g);
  const retry = { retryAfterMinMs: cfg.retryAfterMinMs, retryAfterMaxMs: cfg.retryAfterMaxMs };
  const deadlineParams = { marginMs: cfg.marginMs, marginRatio: cfg.marginRatio, ...retry };

  const inputFor = (req: LlmRequest, ctx: AdmissionContext): GateInput => ({
    req,
    demand: ctx.estimate(req),
    cls: policy.classes[req.sloClass],
    tenant: lookupTenant(policy.tenants, req.tenant),
    nowMs: ctx.nowMs,
    fleet: ctx.fleet,
  });

  const capacity = (input: GateInput): Capacity => {
    const view = assessDeadline(input, deadlineParams);
    if (on('memory')) {
      const memory = checkMemory(input, { reserveRatio: cfg.kvReserveRatio, ...retry });
      if (!memory.pass) return { verdict: memory, view };
    }
    const defers = input.cls.overload === 'defer' || input.cls.overload === 'leftover-only';
    if (defers && view.waitMs > 0) {
      // Deferrable work starts only on capacity free now; the reason names what it waits for.
      const retryAfterMs = drainRetryAfterMs(view.waitMs, cfg.retryAfterMinMs, cfg.retryAfterMaxMs);
      const verdict: GateVerdict = {
        pass: false,
        reason: 'service_capacity',
        status: 503,
        retryAfterMs,
      };
      return { verdict, view };
    }
    if (on('deadline')) {
      const budget = input.fleet.queueBudgetMs(input.cls.name);
      return { verdict: checkDeadline(view, deadlineParams, budget), view };
    }
    return { verdict: { pass: true }, view };
  };

  return {
    type: GOODPUT_ADMISSION,
    // The completion slack is the deadline less a prediction (≥ 0) less at least `marginMs`.
    deadlineMarginMs: on('deadline') ? cfg.marginMs : 0,
    initState: () => ({ budgets: budgetGate() }),
    refuseUnread(ctx, cls, tenant, promptTokensAtMost): Rejection | undefined {
      // Only where a refusal by the deadline gate is final: a class that defers, or whose
      // ladder ends in deferral, would wait instead.
      if (!on('deadline') || !cfg.refuseUnread || defersUnderOverload(cls)) return undefined;
      const leastWaitMs = ctx.fleet.leastWaitMs(cls.name, tenant, promptTokensAtMost);
      return checkLeastWait(ctx.fleet, cls, leastWaitMs, deadlineParams);
    },
    refuseAsked(req, spec): Rejection | undefined {
      if (!on('contract')) return undefined;
      const cls = policy.classes[req.sloClass];
      const tenant = lookupTenant(policy.tenants, req.tenant);
      const v = checkContract({ req, cls, tenant, fleet: { spec } });
      return v.pass ? undefined : { outcome: 'reject', ...v };
    },
    decide(state, req, ctx): AdmissionDecision {
      const input = inputFor(req, ctx);
      for (const check of [
        on('contract') ? checkContract : null,
        on('budget') ? state.budgets.check : null,
      ]) {
        const v = check?.(input);
        if (v !== undefined && !v.pass) {
          return {
            outcome: 'reject',
            ...v,
            assessment: assessment(assessDeadline(input, deadlineParams)),
          };
        }
      }
      const first = capacity(input);
      if (first.verdict.pass) return { outcome: 'admit', assessment: assessment(first.view) };
      for (const step of input.cls.degrade) {
        const tried = tryRung(step, input, ctx, capacity, inputFor);
        if (tried === 'reject' || (tried === 'defer' && isFinal(first.verdict))) {
          return rejection(first.verdict, assessment(first.view));
        }
        if (tried === 'defer') return deferral(req, input.cls, first.verdict, first.view);
        if (tried !== undefined) {
          return {
            outcome: 'admit',
            degradation: tried.degradation,
            assessment: assessment(tried.view),
          };
        }
      }
      const overload = input.cls.overload;
      if ((overload === 'defer' || overload === 'leftover-only') && !isFinal(first.verdict)) {
        return deferral(req, input.cls, first.verdict, first.view);
      }
      return rejection(first.verdict, assessment(first.view));
    },
    commit(state, req, decision, ctx) {
      const demand = decision.assessment?.demand ?? ctx.estimate(req);
      const input = { ...inputFor(req, ctx), demand };
      state.budgets.commit(input);
    },
    settle(state, req, outputTokens, gpuMs, nowMs) {
      state.budgets.settle(req, outputTokens, gpuMs, nowMs);
    },
  };
}

function defersUnderOverload(cls: SloClass): boolean {
  if (cls.overload === 'defer' || cls.overload === 'leftover-only') return true;
  return cls.degrade.some((step) => step.level === 4 && step.mode === 'defer');
}

type Rung = { degradation: Degradation; view: DeadlineView } | 'defer' | 'reject' | undefined;

function tryRung(
  step: DegradeStep,
  input: GateInput,
  ctx: AdmissionContext,
  capacity: (i: GateInput) => Capacity,
  inputFor: (req: LlmRequest, ctx: AdmissionContext) => GateInput,
): Rung {
  const req = input.req;
  switch (step.level) {
    case 1: {
      // Halve the output cap from the predicted p90 down to the class's floor.
      for (let cap = Math.floor(input.demand.output.p90 / 2); cap >= step.minOutputTokens;) {
        const c = capacity(inputFor({ ...req, maxTokens: cap }, ctx));
        if (c.verdict.pass) return { degradation: { level: 1, maxTokens: cap }, view: c.view };
        if (cap === step.minOutputTokens) break;
        cap = Math.max(step.minOutputTokens, Math.floor(cap / 2));
      }
      return undefined;
    }
    case 2: {
      const optional = req.optionalInputTokens ?? 0;
      if (optional <= 0 || optional >= req.inputTokens) return undefined;
      const trimmed = { ...req, inputTokens: req.inputTokens - optional, optionalInputTokens: 0 };
      const c = capacity(inputFor(trimmed, ctx));
      return c.verdict.pass
        ? { degradation: { level: 2, droppedInputTokens: optional }, view: c.view }
        : undefined;
    }
    case 3:
      // A smaller model needs a pool serving it; a fleet of one model has none, so the rung
      // is passed over (the contract gate already refused models the fleet does not serve).
      return undefined;
    case 4:
      return step.mode;
  }
}

function assessment(view: DeadlineView): Assessment {
  return {
    demand: view.demand,
    slackMs: view.slackMs,
    predictedTtftMs: view.predictedTtftMs,
    waitMs: view.waitMs,
    modelledWaitMs: view.modelledWaitMs,
    queueTargetMs: view.queueTargetMs,
  };
}

function deferral(
  req: LlmRequest,
  cls: SloClass,
  verdict: GateVerdict,
  view: DeadlineView,
): AdmissionDecision {
  const horizon = cls.objectives.e2eMs ?? cls.deferMaxMs ?? 600_000;
  return {
    outcome: 'defer',
    deadlineMs: req.arrivalMs + horizon,
    reason: verdict.pass ? 'service_capacity' : verdict.reason,
    assessment: assessment(view),
  };
}

/** A refusal no wait can undo: deferring it would only hold it until it expired. */
const isFinal = (v: GateVerdict) => !v.pass && v.final === true;

function rejection(verdict: GateVerdict, assessment: Assessment): AdmissionDecision {
  if (verdict.pass) throw new Error('rejection of a passing verdict');
  return { outcome: 'reject', ...verdict, assessment };
}
