/**
 * The pipeline stages a policy configures, each a discriminated union of `{ type, params }`:
 * admission (and its gates), dispatch (flow control) and the demand estimator's knobs. Every
 * parameter has a documented default, so a policy names only what it changes.
 */
import { z } from 'zod';
import { DEFAULT_STEP_PACE, type StepPaceParams } from '../routing/step-pace.ts';
import { DEFAULT_GAP_FEEDBACK, type GapFeedbackParams } from '../routing/gap-feedback.ts';
import { SLO_CLASS_NAMES, type SloClassName } from '../request/slo-classes.ts';

const ms = z.number().min(0);
const ratio = z.number().min(0).max(1);

export const GATE_TYPES = ['contract', 'budget', 'memory', 'deadline'] as const;
export type GateType = (typeof GATE_TYPES)[number];

const gate = z.discriminatedUnion('type', [
  z.object({ type: z.literal('contract') }).strict(),
  z.object({ type: z.literal('budget') }).strict(),
  z
    .object({
      type: z.literal('memory'),
      params: z.object({ reserve_ratio: ratio.optional() }).strict().optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal('deadline'),
      params: z
        .object({
          margin_ms: ms.optional(),
          margin_ratio: ratio.optional(),
          sure_wait_quantile: z.number().min(50).max(100).optional(),
          queue_target_ratio: ratio.optional(),
          queue_interval_ms: ms.optional(),
          refuse_unread: z.boolean().optional(),
        })
        .strict()
        .optional(),
    })
    .strict(),
]);

export const admissionSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('admit-all') }).strict(),
  z
    .object({
      type: z.literal('goodput'),
      gates: z
        .array(gate)
        .refine((g) => new Set(g.map((x) => x.type)).size === g.length, {
          message: 'each gate type at most once',
        })
        .optional(),
      retry_after: z
        .object({
          min_ms: ms.optional(),
          max_ms: ms.optional(),
          keep_turns: z.boolean().optional(),
        })
        .strict()
        .refine((r) => (r.min_ms ?? 0) <= (r.max_ms ?? Infinity), { message: 'min_ms ≤ max_ms' })
        .optional(),
    })
    .strict(),
]);

/** Flow control's measure of each replica's pace against its profile (`../routing/step-pace.ts`). */
const paceSchema = z
  .object({
    tolerance: z.number().min(0).optional(),
    window: z.int().min(1).optional(),
    min_samples: z.int().min(1).optional(),
    span_tokens: z.int().min(1).optional(),
    every_ms: ms.optional(),
  })
  .strict();

/** How the gaps clients got cut flow control's step share (`../routing/gap-feedback.ts`). */
const gapFeedbackSchema = z
  .object({
    late_ratio: z.number().gt(0).optional(),
    backoff: z.number().gt(0).max(1).optional(),
    floor_ratio: z.number().gt(0).max(1).optional(),
    recover_per_s: z.number().min(0).optional(),
    hold_ms: ms.optional(),
  })
  .strict();

export const dispatchSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('immediate') }).strict(),
  z
    .object({
      type: z.literal('flow-control'),
      params: z
        .object({
          itl_margin_ratio: ratio.optional(),
          kv_reserve_ratio: ratio.optional(),
          lookahead: z.int().min(1).optional(),
          stall_risk: z.number().min(0).optional(),
          pace: z.union([z.literal(false), paceSchema]).optional(),
          gap_feedback: z.union([z.literal(false), gapFeedbackSchema]).optional(),
          staged_prefill: z.boolean().optional(),
        })
        .strict()
        .optional(),
    })
    .strict(),
]);

const DEFAULT_PRIOR_OUTPUT = { p50: 128, p90: 512 } as const;

const outputPrior = {
  prior_output_p50: z.int().min(1).optional(),
  prior_output_p90: z.int().min(1).optional(),
  prior_output_reserve: z.int().min(1).optional(),
};

export const estimateSchema = z
  .object({
    output_window: z.int().min(1).optional(),
    min_samples: z.int().min(1).optional(),
    ...outputPrior,
    /** A class's own prior (a reasoning class's replies are not a chat's), each field optional. */
    by_class: z.partialRecord(z.enum(SLO_CLASS_NAMES), z.object(outputPrior).strict()).optional(),
    /** Whether a gateway scales its prompt estimates to its backends' counts (prompt-scale.ts). */
    scale_prompts: z.boolean().optional(),
  })
  .strict()
  .superRefine((e, ctx) => {
    const p50 = e.prior_output_p50 ?? DEFAULT_PRIOR_OUTPUT.p50;
    const p90 = e.prior_output_p90 ?? DEFAULT_PRIOR_OUTPUT.p90;
    if (p50 > p90) ctx.addIssue({ code: 'custom', message: 'prior_output_p50 ≤ prior_output_p90' });
    for (const [name, c] of Object.entries(e.by_class ?? {})) {
      if ((c.prior_output_p50 ?? p50) <= (c.prior_output_p90 ?? p90)) continue;
      ctx.addIssue({
        code: 'custom',
        path: ['by_class', name],
        message:
          "prior_output_p50 ≤ prior_output_p90 (the estimate's own where the class sets none)",
      });
    }
  });

export type AdmissionConfig =
  | { readonly type: 'admit-all' }
  | {
      readonly type: 'goodput';
      readonly gates: readonly GateType[];
      /** Memory gate: fraction of a replica's KV kept free for preemption/swap headroom. */
      readonly kvReserveRatio: number;
      /** Deadline gate: uncertainty margin, fixed plus a fraction of the predicted TTFT. */
      readonly marginMs: number;
      readonly marginRatio: number;
      /** Deadline gate: slack is judged at this percentile of calibrated waits (50–100). */
      readonly sureWaitQuantile: number;
      /**
       * Deadline gate, queue-delay control: the target sojourn as a fraction of the class's
       * queue budget, and how long without a wait at the target or a refusal for one before
       * the control lapses (see core/admission/README.md).
       */
      readonly queueTargetRatio: number;
      readonly queueIntervalMs: number;
      /**
       * Deadline gate: refuse from the queue alone, before a request's body is read, what the
       * queue-delay target would refuse whatever the body asks (`Admission.refuseUnread`).
       */
      readonly refuseUnread: boolean;
      readonly retryAfterMinMs: number;
      readonly retryAfterMaxMs: number;
      /**
       * A request refused for its wait that carries an Idempotency-Key keeps its turn: its
       * Retry-After is when a retry will be admitted (../queueing/kept-turns.ts).
       */
      readonly keepTurns: boolean;
    };

export type DispatchConfig =
  | { readonly type: 'immediate' }
  | {
      readonly type: 'flow-control';
      /**
       * A step may take at most (1 − margin − relay) × the tightest ITL objective of its
       * decodes: the margin for the step's own variance, the relay's share for what the host
       * adds to every gap before its client sees it.
       */
      readonly itlMarginRatio: number;
      /** The host's lateness allowed on every gap (`resilience.shed_gap_ratio`). */
      readonly relayGapRatio: number;
      readonly kvReserveRatio: number;
      /** Queued requests scanned past a head that does not fit yet. */
      readonly lookahead: number;
      /** Expected streams a long prompt's stall may push past their p99 gap objective. */
      readonly stallRisk: number;
      /** How each replica's pace against its profile is measured; null: the profile is trusted. */
      readonly pace: StepPaceParams | null;
      /** How late gaps cut the step share; null: the host is trusted to deliver in time. */
      readonly gapFeedback: GapFeedbackParams | null;
      /** Whether long prompts go in pieces where the host can stage them (`staged-prefill.ts`). */
      readonly stagedPrefill: boolean;
    };

export interface EstimateConfig {
  readonly outputWindow: number;
  readonly minSamples: number;
  readonly priorOutput: { readonly p50: number; readonly p90: number };
  /** Output tokens KV is reserved for while a class's lengths are the prior (at least its p90). */
  readonly priorOutputReserve: number;
  /** The classes with a prior of their own, each field resolved against the estimate's. */
  readonly classPriors: Partial<Record<SloClassName, OutputPrior>>;
  /** Whether a gateway scales its prompt estimates to its backends' counts (default: on). */
  readonly scalePrompts: boolean;
}

export interface OutputPrior {
  readonly p50: number;
  readonly p90: number;
  readonly reserve: number;
}

export function resolveAdmission(a: z.infer<typeof admissionSchema>): AdmissionConfig {
  if (a.type === 'admit-all') return a;
  const gates: ReadonlyArray<z.infer<typeof gate>> =
    a.gates ?? GATE_TYPES.map((type) => ({ type }) as z.infer<typeof gate>);
  let memory: { reserve_ratio?: number } | undefined;
  let deadline: Extract<z.infer<typeof gate>, { type: 'deadline' }>['params'];
  for (const g of gates) {
    if (g.type === 'memory') memory = g.params;
    if (g.type === 'deadline') deadline = g.params;
  }
  return {
    type: 'goodput',
    gates: gates.map((g) => g.type),
    kvReserveRatio: memory?.reserve_ratio ?? 0.05,
    marginMs: deadline?.margin_ms ?? 50,
    marginRatio: deadline?.margin_ratio ?? 0,
    sureWaitQuantile: deadline?.sure_wait_quantile ?? 90,
    queueTargetRatio: deadline?.queue_target_ratio ?? 0.15,
    queueIntervalMs: deadline?.queue_interval_ms ?? 1000,
    refuseUnread: deadline?.refuse_unread ?? true,
    retryAfterMinMs: a.retry_after?.min_ms ?? 500,
    retryAfterMaxMs: a.retry_after?.max_ms ?? 60_000,
    keepTurns: a.retry_after?.keep_turns ?? true,
  };
}

/** Flow control's margin on every step's gap budget for the step time's own variance. */
export const DEFAULT_ITL_MARGIN_RATIO = 0.1;

/**
 * `relayGapRatio`: the share of a gap the host's relay may add (`resilience.shed_gap_ratio`).
 * A policy that names no dispatch gets flow control under Goodput's admission, as
 * `examples/policy.yaml` shows — tenant weights, class contracts and priority order nothing
 * where every request is handed to a replica at once — and `immediate` under `admit-all`, the
 * baselines', whose engines queue what they are sent.
 */
export function resolveDispatch(
  d: z.infer<typeof dispatchSchema> | undefined,
  relayGapRatio: number,
  admission: AdmissionConfig['type'],
): DispatchConfig {
  const type = d?.type ?? (admission === 'admit-all' ? 'immediate' : 'flow-control');
  if (type === 'immediate') return { type: 'immediate' };
  const p = d?.type === 'flow-control' ? d.params : undefined;
  return {
    type: 'flow-control',
    itlMarginRatio: p?.itl_margin_ratio ?? DEFAULT_ITL_MARGIN_RATIO,
    relayGapRatio,
    kvReserveRatio: p?.kv_reserve_ratio ?? 0.05,
    lookahead: p?.lookahead ?? 16,
    stallRisk: p?.stall_risk ?? 0.5,
    pace: resolvePace(p?.pace),
    gapFeedback: resolveGapFeedback(p?.gap_feedback),
    stagedPrefill: p?.staged_prefill ?? true,
  };
}

function resolveGapFeedback(
  g: z.infer<typeof gapFeedbackSchema> | false | undefined,
): GapFeedbackParams | null {
  if (g === false) return null;
  const d = DEFAULT_GAP_FEEDBACK;
  return {
    lateRatio: g?.late_ratio ?? d.lateRatio,
    backoff: g?.backoff ?? d.backoff,
    floorRatio: g?.floor_ratio ?? d.floorRatio,
    recoverPerS: g?.recover_per_s ?? d.recoverPerS,
    holdMs: g?.hold_ms ?? d.holdMs,
  };
}

function resolvePace(p: z.infer<typeof paceSchema> | false | undefined): StepPaceParams | null {
  if (p === false) return null;
  const d = DEFAULT_STEP_PACE;
  return {
    tolerance: p?.tolerance ?? d.tolerance,
    window: p?.window ?? d.window,
    minSamples: p?.min_samples ?? d.minSamples,
    spanTokens: p?.span_tokens ?? d.spanTokens,
    everyMs: p?.every_ms ?? d.everyMs,
  };
}

/**
 * Output tokens KV is reserved for until a class's lengths are learned. The prior's p90 (512)
 * is a guess: a cold flood of 500–2,500-token replies reserved at it was preempted, and most
 * of it missed its token gaps. 4,096 held every such flood's promise in the simulator, with
 * replies up to ~6,000 tokens; 2,048 did not past ~2,000. What it costs: a cold start admits
 * fewer until lengths are known (a chat flood without max_tokens, 27–29% fewer good requests in
 * its first 20 s; bench/RESULTS.md). It also bounds the young rule of `OutputLengthModel`:
 * while most of a class's requests still run, KV for twice the longest output that ended.
 */
export const PRIOR_OUTPUT_RESERVE = 4_096;

export function resolveEstimate(e: z.infer<typeof estimateSchema> | undefined): EstimateConfig {
  const p50 = e?.prior_output_p50 ?? DEFAULT_PRIOR_OUTPUT.p50;
  const p90 = e?.prior_output_p90 ?? DEFAULT_PRIOR_OUTPUT.p90;
  const reserve = e?.prior_output_reserve ?? PRIOR_OUTPUT_RESERVE;
  const classPriors: Partial<Record<SloClassName, OutputPrior>> = {};
  for (const name of SLO_CLASS_NAMES) {
    const c = e?.by_class?.[name];
    if (c === undefined) continue;
    classPriors[name] = {
      p50: c.prior_output_p50 ?? p50,
      p90: c.prior_output_p90 ?? p90,
      reserve: c.prior_output_reserve ?? reserve,
    };
  }
  return {
    outputWindow: e?.output_window ?? 256,
    minSamples: e?.min_samples ?? 20,
    priorOutput: { p50, p90 },
    priorOutputReserve: reserve,
    classPriors,
    scalePrompts: e?.scale_prompts ?? true,
  };
}
