/**
 * The four SLO classes and their default objectives. A request is good when it succeeded and
 * every objective its class sets holds; an objective left undefined is not checked.
 */
import type { Ms, Tokens } from './units.ts';

export const SLO_CLASS_NAMES = ['interactive', 'reasoning', 'batch', 'best_effort'] as const;
export type SloClassName = (typeof SLO_CLASS_NAMES)[number];

/**
 * OpenAI's service tiers, as a request's `service_tier` names them: `auto` and `default` ask
 * for the tenant's own class; the others name a class where the policy maps them to one
 * (`service_tiers`).
 */
export const SERVICE_TIERS = ['auto', 'default', 'flex', 'scale', 'priority'] as const;
export type ServiceTier = (typeof SERVICE_TIERS)[number];
/** The tiers that can name a class. */
export const CLASS_TIERS = ['flex', 'scale', 'priority'] as const;
export type ClassTier = (typeof CLASS_TIERS)[number];

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

export const OVERLOAD_BEHAVIOURS = ['reject-fast', 'queue', 'defer', 'leftover-only'] as const;
/** What admission does with a request it cannot serve in time: turn it away at once, let it wait
 * longer (its deadline allows), or park it in the deferred queue (served from leftover capacity). */
export type OverloadBehaviour = (typeof OVERLOAD_BEHAVIOURS)[number];

/** One rung of a class's degrade ladder; admission tries them in order, never one not listed. */
export type DegradeStep =
  | { readonly level: 1; readonly minOutputTokens: Tokens }
  | { readonly level: 2 }
  | { readonly level: 3; readonly model: string }
  | { readonly level: 4; readonly mode: 'defer' | 'reject' };

export interface ClassContract {
  /** Share of dispatched work reserved for the band while it has work waiting (0–1). */
  readonly minShare: number;
  /** Above this share the band yields to any other band with work waiting (0–1). */
  readonly maxShare: number;
  /** Every this many ms its oldest request has waited lifts the band one priority up. */
  readonly agingMs?: Ms;
  /** A request that has waited this long is dispatched ahead of every band. */
  readonly starvationMs?: Ms;
}

export const NO_CONTRACT: ClassContract = { minShare: 0, maxShare: 1 };

export interface SloClass {
  readonly name: SloClassName;
  readonly objectives: SloObjectives;
  readonly overload: OverloadBehaviour;
  /** Output budget: the most tokens a request of this class may generate. */
  readonly maxOutputTokens?: Tokens;
  readonly preemptible: boolean;
  /** Band: lower is served first. */
  readonly priority: number;
  readonly degrade: readonly DegradeStep[];
  /** How long a deferred request may wait, from arrival, when the class sets no E2E objective. */
  readonly deferMaxMs?: Ms;
  /** Its band's share contract: reserved minimum, burst maximum, aging, starvation bound. */
  readonly contract: ClassContract;
}

export const DEFAULT_SLO_CLASSES: Readonly<Record<SloClassName, SloClass>> = {
  interactive: {
    name: 'interactive',
    objectives: { ttftMs: 2_000, itlP99Ms: 80 },
    overload: 'reject-fast',
    preemptible: false,
    priority: 0,
    degrade: [],
    contract: NO_CONTRACT,
  },
  reasoning: {
    name: 'reasoning',
    objectives: { ttftMs: 10_000, itlP99Ms: 100, e2eMs: 300_000 },
    overload: 'queue',
    maxOutputTokens: 32_768,
    preemptible: false,
    priority: 1,
    degrade: [{ level: 1, minOutputTokens: 1_024 }],
    contract: NO_CONTRACT,
  },
  batch: {
    name: 'batch',
    objectives: { e2eMs: 3_600_000 },
    overload: 'defer',
    preemptible: true,
    priority: 2,
    degrade: [{ level: 4, mode: 'defer' }],
    contract: NO_CONTRACT,
  },
  best_effort: {
    name: 'best_effort',
    objectives: {},
    overload: 'leftover-only',
    preemptible: true,
    priority: 3,
    degrade: [
      { level: 1, minOutputTokens: 64 },
      { level: 4, mode: 'defer' },
    ],
    deferMaxMs: 600_000,
    // Leftover capacity only, but never starved: after two minutes it goes ahead.
    contract: { ...NO_CONTRACT, starvationMs: 120_000 },
  },
};

export function isSloClassName(value: string): value is SloClassName {
  return (SLO_CLASS_NAMES as readonly string[]).includes(value);
}
