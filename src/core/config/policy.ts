/**
 * The control policy: which plugin runs at each pipeline stage, the SLO classes it serves, and
 * the revision string stamped on every report and decision. A policy comes from a named preset
 * or a file; either way it is validated here and fails at load, never silently.
 */
import { z } from 'zod';
import { ADMISSIONS } from '../admission/registry.ts';
import { ROUTERS } from '../routing/registry.ts';
import {
  DEFAULT_SLO_CLASSES,
  SLO_CLASS_NAMES,
  type SloClass,
  type SloClassName,
} from '../request/slo-classes.ts';
import { parseOrThrow } from './validate.ts';

const ms = z.number().min(0);

const classOverride = z
  .object({
    ttft_ms: ms.optional(),
    itl_p99_ms: ms.optional(),
    tpot_ms: ms.optional(),
    e2e_ms: ms.optional(),
    max_output_tokens: z.int().min(1).optional(),
  })
  .strict();

export const policySchema = z
  .object({
    name: z.string().min(1),
    policy_revision: z.string().min(1),
    description: z.string().optional(),
    admission: z
      .object({ type: z.enum(Object.keys(ADMISSIONS) as [string, ...string[]]) })
      .strict(),
    routing: z.object({ type: z.enum(Object.keys(ROUTERS) as [string, ...string[]]) }).strict(),
    classes: z.partialRecord(z.enum(SLO_CLASS_NAMES), classOverride).optional(),
  })
  .strict();

export type PolicyFile = z.infer<typeof policySchema>;

export interface ResolvedPolicy {
  readonly name: string;
  readonly revision: string;
  readonly admission: { readonly type: string };
  readonly routing: { readonly type: string };
  readonly classes: Readonly<Record<SloClassName, SloClass>>;
}

/** Validates a parsed policy document (from YAML or JSON) and applies class overrides to the defaults. */
export function resolvePolicy(input: unknown): ResolvedPolicy {
  const file = parseOrThrow(policySchema, input);
  const classes = { ...DEFAULT_SLO_CLASSES };
  for (const name of SLO_CLASS_NAMES) {
    const o = file.classes?.[name];
    if (o === undefined) continue;
    const base = classes[name];
    classes[name] = {
      ...base,
      maxOutputTokens: o.max_output_tokens ?? base.maxOutputTokens,
      objectives: {
        ttftMs: o.ttft_ms ?? base.objectives.ttftMs,
        itlP99Ms: o.itl_p99_ms ?? base.objectives.itlP99Ms,
        tpotMs: o.tpot_ms ?? base.objectives.tpotMs,
        e2eMs: o.e2e_ms ?? base.objectives.e2eMs,
      },
    };
  }
  return {
    name: file.name,
    revision: file.policy_revision,
    admission: file.admission,
    routing: file.routing,
    classes,
  };
}
