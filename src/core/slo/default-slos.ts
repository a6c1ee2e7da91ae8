/**
 * The SLOs a policy gets when it writes none: one per class that sets objectives, covering all
 * its requests over 28 days — 99.5% of them served (a refusal costs the client more than a slow
 * token), and 99% within each latency objective the class sets (TTFT, token gap, completion).
 * They follow the classes as the policy resolved them, so a class's `ttft_ms` moves its SLO too.
 * A class's `tpot_ms` has no SLO objective: TPOT is a per-request mean the token gaps bound.
 */
import { SLO_CLASS_NAMES, type SloClass, type SloClassName } from '../request/slo-classes.ts';
import type { Exclusion, Objective, SloDefinition } from './slo.ts';

export const DEFAULT_WINDOW_MS = 28 * 86_400_000;
export const DEFAULT_SUCCESS_TARGET = 0.995;
export const DEFAULT_LATENCY_TARGET = 0.99;
/** Everything the client caused: its own disconnects, bad requests, its tenant's limits. */
export const DEFAULT_EXCLUSIONS: readonly Exclusion[] = [
  'client_closed_before_dispatch',
  'client_closed_streaming',
  'client_error',
  'tenant_limits',
];

export function defaultSlos(
  classes: Readonly<Record<SloClassName, SloClass>>,
  revision: string,
): SloDefinition[] {
  const out: SloDefinition[] = [];
  for (const name of SLO_CLASS_NAMES) {
    const o = classes[name].objectives;
    const latency: Objective[] = [];
    const t = DEFAULT_LATENCY_TARGET;
    if (o.ttftMs !== undefined)
      latency.push({ name: 'ttft', kind: 'ttft', thresholdMs: o.ttftMs, target: t });
    if (o.itlP99Ms !== undefined)
      latency.push({ name: 'token_gap', kind: 'token_gap', thresholdMs: o.itlP99Ms, target: t });
    if (o.e2eMs !== undefined)
      latency.push({ name: 'e2e', kind: 'e2e', thresholdMs: o.e2eMs, target: t });
    if (latency.length === 0) continue;
    out.push({
      name,
      population: { class: name },
      windowMs: DEFAULT_WINDOW_MS,
      objectives: [
        { name: 'success', kind: 'success', target: DEFAULT_SUCCESS_TARGET },
        ...latency,
      ],
      exclusions: DEFAULT_EXCLUSIONS,
      revision,
    });
  }
  return out;
}
