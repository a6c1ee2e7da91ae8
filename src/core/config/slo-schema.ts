/**
 * The `slos` section of a policy: SLOs as objects (../slo/slo.ts) — name, population, rolling
 * window, objectives, exclusions and the revision they were defined under. Without the section
 * each class with objectives gets the default SLO (../slo/default-slos.ts); `slos: []` has none.
 * Names are metric labels, so they are plain words, each used once.
 */
import { z } from 'zod';
import { SLO_CLASS_NAMES, type SloClass, type SloClassName } from '../request/slo-classes.ts';
import { ConfigError } from '../errors.ts';
import { DEFAULT_EXCLUSIONS, defaultSlos } from '../slo/default-slos.ts';
import { DURATION_PATTERN, parseDuration } from '../slo/duration.ts';
import { EXCLUSIONS, type Objective, type SloDefinition } from '../slo/slo.ts';

const label = z
  .string()
  .regex(/^[a-z][a-z0-9_]*$/, { message: 'a name of lowercase letters, digits and _' });

const target = z.number().refine((x) => x > 0 && x < 1, { message: 'a number in (0, 1)' });
const thresholdMs = z.number().positive();

const objective = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('success'), name: label.optional(), target }).strict(),
  z
    .object({
      kind: z.enum(['ttft', 'token_gap', 'e2e']),
      name: label.optional(),
      threshold_ms: thresholdMs,
      target,
    })
    .strict(),
]);

/** Adds an issue at `[i, key]` for each entry whose name an earlier one took. */
function uniqueNames<T>(name: (t: T) => string, key: (t: T) => string, what: string) {
  return (items: readonly T[], ctx: z.RefinementCtx) => {
    const seen = new Set<string>();
    items.forEach((t, i) => {
      if (seen.has(name(t))) ctx.addIssue({ code: 'custom', message: what, path: [i, key(t)] });
      seen.add(name(t));
    });
  };
}

const slo = z
  .object({
    name: label,
    population: z
      .object({
        class: z.enum(SLO_CLASS_NAMES).optional(),
        model: z.string().min(1).optional(),
        tenant: z.string().min(1).optional(),
      })
      .strict()
      .optional(),
    window: z.string().regex(DURATION_PATTERN, { message: 'a duration like 5m, 1h or 28d' }),
    objectives: z
      .array(objective)
      .min(1)
      .superRefine(
        uniqueNames(
          (o) => o.name ?? o.kind,
          (o) => (o.name === undefined ? 'kind' : 'name'),
          'an objective name no other objective of this SLO has (give it a name)',
        ),
      ),
    exclusions: z.array(z.enum(EXCLUSIONS)).optional(),
    policy_revision: z.string().min(1).optional(),
  })
  .strict();

export const slosSchema = z.array(slo).superRefine(
  uniqueNames(
    (s) => s.name,
    () => 'name',
    'a name no other SLO has',
  ),
);

/** The schema let only durations through; a window that is not one still fails loudly. */
function windowMs(text: string, i: number): number {
  const ms = parseDuration(text);
  if (ms === undefined) throw new ConfigError(`slos[${i}].window`, 'a duration', text);
  return ms;
}

function toObjective(o: z.infer<typeof objective>): Objective {
  const name = o.name ?? o.kind;
  return o.kind === 'success'
    ? { name, kind: 'success', target: o.target }
    : { name, kind: o.kind, thresholdMs: o.threshold_ms, target: o.target };
}

export function resolveSlos(
  section: z.infer<typeof slosSchema> | undefined,
  classes: Readonly<Record<SloClassName, SloClass>>,
  revision: string,
): SloDefinition[] {
  if (section === undefined) return defaultSlos(classes, revision);
  return section.map((s, i) => ({
    name: s.name,
    population: { ...s.population },
    windowMs: windowMs(s.window, i),
    objectives: s.objectives.map(toObjective),
    exclusions: s.exclusions ?? DEFAULT_EXCLUSIONS,
    revision: s.policy_revision ?? revision,
  }));
}
