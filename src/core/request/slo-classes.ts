/**
 * The four SLO classes and their default objectives. A request is good when it succeeded and
 * every objective its class sets holds; an objective left undefined is not checked.
 */
import type { Ms, Tokens } from './units.ts';

export const SLO_CLASS_NAMES = ['interactive', 'reasoning', 'batch', 'best_effort'] as const;
export type SloClassName = (typeof SLO_CLASS_NAMES)[number];

export interface SloObjectives {
  /** Time to first token, from arrival. */
  readonly ttftMs?: Ms;
  /** 99th percentile of the request's own token gaps. */
  readonly itlP99Ms?: Ms;
  /** Mean time per output token after the first. */
  readonly tpotMs?: Ms;
  /** Completion deadline, arrival to last token. */
  readonly e2eMs?: Ms;
}

export type OverloadBehaviour = 'reject-fast' | 'queue' | 'defer' | 'leftover-only';

export interface SloClass {
  readonly name: SloClassName;
  readonly objectives: SloObjectives;
  readonly overload: OverloadBehaviour;
  /** Output budget: the most tokens a request of this class may generate. */
  readonly maxOutputTokens?: Tokens;
  readonly preemptible: boolean;
}

export const DEFAULT_SLO_CLASSES: Readonly<Record<SloClassName, SloClass>> = {
  interactive: {
    name: 'interactive',
    objectives: { ttftMs: 2_000, itlP99Ms: 80 },
    overload: 'reject-fast',
    preemptible: false,
  },
  reasoning: {
    name: 'reasoning',
    objectives: { ttftMs: 10_000, itlP99Ms: 100, e2eMs: 300_000 },
    overload: 'queue',
    maxOutputTokens: 32_768,
    preemptible: false,
  },
  batch: {
    name: 'batch',
    objectives: { e2eMs: 3_600_000 },
    overload: 'defer',
    preemptible: true,
  },
  best_effort: {
    name: 'best_effort',
    objectives: {},
    overload: 'leftover-only',
    preemptible: true,
  },
};

export function isSloClassName(value: string): value is SloClassName {
  return (SLO_CLASS_NAMES as readonly string[]).includes(value);
}
