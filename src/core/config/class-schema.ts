/**
 * The `classes` section of a policy: per-class overrides of the default SLO classes — objectives,
 * overload behaviour, band priority, its share contract and the degrade ladder the class approves. A ladder lists
 * levels in ascending order; admission never applies a level the ladder does not list.
 */
import { z } from 'zod';
import {
  DEFAULT_SLO_CLASSES,
  OVERLOAD_BEHAVIOURS,
  SLO_CLASS_NAMES,
  type DegradeStep,
  type SloClass,
  type SloClassName,
} from '../request/slo-classes.ts';

const ms = z.number().min(0);
/** An objective no request can meet at 0 ms: every one would be refused, so none is accepted. */
const objective = z.number().positive();

const degradeStep = z.discriminatedUnion('level', [
  z.object({ level: z.literal(1), min_output_tokens: z.int().min(1) }).strict(),
  z.object({ level: z.literal(2) }).strict(),
  z.object({ level: z.literal(3), model: z.string().min(1) }).strict(),
  z.object({ level: z.literal(4), mode: z.enum(['defer', 'reject']) }).strict(),
]);

const ladder = z
  .array(degradeStep)
  .refine((steps) => steps.every((s, i) => i === 0 || s.level > steps[i - 1].level), {
    message: 'levels in ascending order, each at most once',
  });

const classOverride = z
  .object({
    ttft_ms: objective.optional(),
    itl_p99_ms: objective.optional(),
    tpot_ms: objective.optional(),
    e2e_ms: objective.optional(),
    max_output_tokens: z.int().min(1).optional(),
    overload: z.enum(OVERLOAD_BEHAVIOURS).optional(),
    priority: z.int().min(0).optional(),
    degrade: ladder.optional(),
    defer_max_ms: ms.optional(),
    min_share: z.number().min(0).max(1).optional(),
    max_share: z.number().gt(0).max(1).optional(),
    aging_ms: z.number().positive().optional(),
    starvation_ms: z.number().positive().optional(),
  })
  .strict()
  .refine((o) => (o.min_share ?? 0) <= (o.max_share ?? 1), {
    message: 'min_share ≤ max_share',
  });

export const classesSchema = z
  .partialRecord(z.enum(SLO_CLASS_NAMES), classOverride)
  .refine((c) => Object.values(c).reduce((n, o) => n + (o?.min_share ?? 0), 0) <= 1, {
    message: 'min_share summed over the classes ≤ 1',
  });

function toStep(s: z.infer<typeof degradeStep>): DegradeStep {
  switch (s.level) {
    case 1:
      return { level: 1, minOutputTokens: s.min_output_tokens };
    case 2:
      return { level: 2 };
    case 3:
      return { level: 3, model: s.model };
    case 4:
      return { level: 4, mode: s.mode };
  }
}

export function resolveClasses(
  overrides: z.infer<typeof classesSchema> | undefined,
): Readonly<Record<SloClassName, SloClass>> {
  const classes = { ...DEFAULT_SLO_CLASSES };
  for (const name of SLO_CLASS_NAMES) {
    const o = overrides?.[name];
    if (o === undefined) continue;
    const base = classes[name];
    classes[name] = {
      ...base,
      maxOutputTokens: o.max_output_tokens ?? base.maxOutputTokens,
      overload: o.overload ?? base.overload,
      priority: o.priority ?? base.priority,
      degrade: o.degrade?.map(toStep) ?? base.degrade,
      deferMaxMs: o.defer_max_ms ?? base.deferMaxMs,
      contract: {
        minShare: o.min_share ?? base.contract.minShare,
        maxShare: o.max_share ?? base.contract.maxShare,
        agingMs: o.aging_ms ?? base.contract.agingMs,
        starvationMs: o.starvation_ms ?? base.contract.starvationMs,
      },
      objectives: {
        ttftMs: o.ttft_ms ?? base.objectives.ttftMs,
        itlP99Ms: o.itl_p99_ms ?? base.objectives.itlP99Ms,
        tpotMs: o.tpot_ms ?? base.objectives.tpotMs,
        e2eMs: o.e2e_ms ?? base.objectives.e2eMs,
      },
    };
  }
  return classes;
}
