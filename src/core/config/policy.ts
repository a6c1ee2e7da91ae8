/**
 * The control policy: which plugin runs at each pipeline stage with which parameters, the SLO
 * classes and tenants it serves, the SLOs it is held to, and the revision string stamped on every
 * report and decision. A policy comes from a named preset or a file; either way it is validated
 * here and fails at load with the path and value of the first bad entry, never silently.
 */
import { z } from 'zod';
import { resolveRouting, routingSchema, type RoutingConfig } from './routing-schema.ts';
import {
  CLASS_TIERS,
  SLO_CLASS_NAMES,
  type ClassTier,
  type SloClass,
  type SloClassName,
} from '../request/slo-classes.ts';
import { parseOrThrow } from './validate.ts';
import { classesSchema, resolveClasses } from './class-schema.ts';
import {
  DEFAULT_SHED_GAP_RATIO,
  resilienceSchema,
  resolveResilience,
  type ResilienceConfig,
} from './resilience-schema.ts';
import { resolveTenants, tenantsSchema, type TenantDirectory } from './tenant-schema.ts';
import { queueingSchema, resolveQueueing, type QueueingConfig } from './queueing-schema.ts';
import { resolveSlos, slosSchema } from './slo-schema.ts';
import type { SloDefinition } from '../slo/slo.ts';
import {
  DEFAULT_ITL_MARGIN_RATIO,
  admissionSchema,
  dispatchSchema,
  estimateSchema,
  resolveAdmission,
  resolveDispatch,
  resolveEstimate,
  type AdmissionConfig,
  type DispatchConfig,
  type EstimateConfig,
} from './stage-schema.ts';

export const policySchema = z
  .object({
    name: z.string().min(1),
    policy_revision: z.string().min(1),
    description: z.string().optional(),
    admission: admissionSchema,
    dispatch: dispatchSchema.optional(),
    queueing: queueingSchema.optional(),
    routing: routingSchema,
    estimate: estimateSchema.optional(),
    classes: classesSchema.optional(),
    tenants: tenantsSchema.optional(),
    resilience: resilienceSchema.optional(),
    // SLOs as objects: what attainment the service owes, over what window (slo-schema.ts).
    slos: slosSchema.optional(),
    // The class each OpenAI service tier a request may name is served in (none by default).
    service_tiers: z.partialRecord(z.enum(CLASS_TIERS), z.enum(SLO_CLASS_NAMES)).optional(),
    // The engine the replicas run, when the command line does not say (`--engine-version`):
    // what the estimator's step-time model and a simulated fleet assume.
    engine: z
      .object({ version: z.string().min(1) })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((p, ctx) => {
    // Under flow control, engine steps get what is left of every gap objective
    // (../dispatch/README.md); dispatched at once, they are not held to it.
    if (p.dispatch?.type !== 'flow-control') return;
    const margin = p.dispatch.params?.itl_margin_ratio;
    const relay = p.resilience?.shed_gap_ratio;
    if ((margin ?? DEFAULT_ITL_MARGIN_RATIO) + (relay ?? DEFAULT_SHED_GAP_RATIO) < 1) return;
    ctx.addIssue({
      code: 'custom',
      message:
        'a value that leaves engine steps part of every gap objective: ' +
        'dispatch.params.itl_margin_ratio + resilience.shed_gap_ratio < 1',
      path:
        margin === undefined
          ? ['resilience', 'shed_gap_ratio']
          : ['dispatch', 'params', 'itl_margin_ratio'],
    });
  });

export type PolicyFile = z.infer<typeof policySchema>;

export interface ResolvedPolicy {
  readonly name: string;
  readonly revision: string;
  readonly admission: AdmissionConfig;
  readonly dispatch: DispatchConfig;
  readonly queueing: QueueingConfig;
  readonly routing: RoutingConfig;
  readonly estimate: EstimateConfig;
  readonly classes: Readonly<Record<SloClassName, SloClass>>;
  readonly tenants: TenantDirectory;
  readonly resilience: ResilienceConfig;
  readonly slos: readonly SloDefinition[];
  readonly engine: { readonly version?: string };
  /**
   * The class a request's `service_tier` names, by tier: a tier not listed is refused by name
   * (`auto` and `default` always ask for the tenant's own class).
   */
  readonly serviceTiers: Readonly<Partial<Record<ClassTier, SloClassName>>>;
}

/** Validates a parsed policy document (from YAML or JSON) and fills in every default. */
export function resolvePolicy(input: unknown): ResolvedPolicy {
  const file = parseOrThrow(policySchema, input);
  const classes = resolveClasses(file.classes);
  const resilience = resolveResilience(file.resilience);
  const admission = resolveAdmission(file.admission);
  return {
    name: file.name,
    revision: file.policy_revision,
    admission,
    dispatch: resolveDispatch(file.dispatch, resilience.shedGapRatio, admission.type),
    queueing: resolveQueueing(file.queueing),
    routing: resolveRouting(file.routing),
    estimate: resolveEstimate(file.estimate),
    classes,
    tenants: resolveTenants(file.tenants),
    resilience,
    slos: resolveSlos(file.slos, classes, file.policy_revision),
    engine: { version: file.engine?.version },
    serviceTiers: file.service_tiers ?? {},
  };
}
