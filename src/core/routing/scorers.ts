/**
 * Every routing scorer, registered once by name: what it measures of a replica for a request,
 * in a stated unit, lower better (README.md gives each one's range and formula). The time
 * scorers share one unit — milliseconds of this request's life — so that prefill saved by a
 * warm cache and queue wait added by a busy replica are weighed against each other directly.
 */
import type { ReplicaAccount } from '../fleet/replica-ledger.ts';
import { kvCapacityOf, kvUsedOf, type ReplicaSnapshot } from '../fleet/replica-snapshot.ts';
import { stallRisk } from './gap-tolerance.ts';
import type { RouteContext, RouteRequest, Scorer } from './route.ts';
import { choicesOf } from '../request/demand.ts';

/** Requests this control plane has in flight there (Envoy's LEAST_REQUEST signal). */
const inFlight: Scorer = {
  name: 'in-flight',
  unit: 'requests',
  score: (_r, x) => x.inFlight,
};

/** Requests waiting in the engine's own queue, as it reports them (llm-d's queue scorer). */
const queueDepth: Scorer = {
  name: 'queue-depth',
  unit: 'requests',
  score: (_r, x) => x.waiting,
};

/** The KV cache in use as the engine reports it, 0–1 (llm-d's kv-cache-utilization scorer). */
const kvUsage: Scorer = {
  name: 'kv-usage',
  unit: 'ratio',
  score: (_r, x) => Math.min(1, Math.max(0, x.kvUsage)),
};

/**
 * KV the replica would hold with this request placed, over its capacity: the larger of what this
 * control plane reserved there and what the engine reports, plus the request's own reservation.
 */
const kvPressure: Scorer = {
  name: 'kv-pressure',
  unit: 'ratio',
  score(r, x, ctx) {
    const used = kvUsedOf(x, accountOf(x, ctx).reservedKvTokens, ctx.spec);
    return (used + r.demand.kvTokens) / kvCapacityOf(x, ctx.spec);
  },
};

/** The share of the prompt the replica's cache is not expected to hold (llm-d's prefix scorer, inverted). */
const prefixMiss: Scorer = {
  name: 'prefix-miss',
  unit: 'ratio',
  score: (r, x, ctx) => 1 - ctx.hits[x.index] / Math.max(1, r.req.inputTokens),
};

/**
 * Queue work ahead at the replica: the prefill of the prompts placed there that have not yet
 * streamed (the engine computes them before, or beside, this one), and — when every sequence
 * slot is taken — a decode step per request over the limit, at the replica's decode batch.
 */
function queueWorkMs(x: ReplicaSnapshot, ctx: RouteContext): number {
  const a = accountOf(x, ctx);
  let ms = a.pendingPrefillTokens > 0 ? ctx.flow.prefillMs(a.pendingPrefillTokens) : 0;
  const over = a.seqs + 1 - ctx.spec.maxNumSeqs;
  if (over > 0) ms += over * ctx.flow.decodeStepMs(a.decoding, a.decodeContextTokens);
  return a.pace * ms;
}

const queueWork: Scorer = {
  name: 'queue-work',
  unit: 'ms',
  score: (_r, x, ctx) => queueWorkMs(x, ctx),
};

/** This prompt's prefill there, after the tokens its cache is expected to hold. */
function prefillAfterHitMs(r: RouteRequest, x: ReplicaSnapshot, ctx: RouteContext): number {
  const uncached = Math.max(1, r.req.inputTokens - ctx.hits[x.index]);
  return accountOf(x, ctx).pace * ctx.flow.prefillMs(uncached);
}

const prefill: Scorer = {
  name: 'prefill',
  unit: 'ms',
  score: prefillAfterHitMs,
};

/** The replica's account in the control plane's ledger. */
function accountOf(x: ReplicaSnapshot, ctx: RouteContext): ReplicaAccount {
  ctx.ledger.resize(x.index + 1);
  return ctx.ledger.replicas[x.index];
}

/**
 * A decode step of the replica's batch with `r` added (each of its choices), every stream at its
 * context, at its pace.
 */
function stepWithMs(r: RouteRequest, a: ReplicaAccount, ctx: RouteContext): number {
  const own = choicesOf(r.req);
  const seqs = Math.min(ctx.spec.maxNumSeqs, a.seqs + own);
  const context = a.decodeContextTokens + a.pendingPrefillTokens + own * r.req.inputTokens;
  return a.pace * ctx.flow.decodeStepMs(seqs, context);
}

/** Its decode there: its predicted output (p50) at the step time of the batch with it added. */
function decodeMs(r: RouteRequest, x: ReplicaSnapshot, ctx: RouteContext): number {
  return Math.max(1, r.demand.output.p50) * stepWithMs(r, accountOf(x, ctx), ctx);
}

const decode: Scorer = {
  name: 'decode',
  unit: 'ms',
  score: decodeMs,
};

/**
 * What it costs the streams already decoding there: its prefill stalls each of them once, and
 * while it decodes beside them every step is slower by what one more stream adds — for about as
 * many steps as its predicted output (stream·ms).
 */
const interference: Scorer = {
  name: 'interference',
  unit: 'ms',
  score(r, x, ctx) {
    const a = accountOf(x, ctx);
    const streams = a.seqs;
    if (streams === 0) return 0;
    const without =
      a.pace *
      ctx.flow.decodeStepMs(
        Math.min(ctx.spec.maxNumSeqs, streams),
        a.decodeContextTokens + a.pendingPrefillTokens,
      );
    const slower = stepWithMs(r, a, ctx) - without;
    const steps = Math.max(1, r.demand.output.p50);
    return streams * (prefillAfterHitMs(r, x, ctx) + Math.max(0, slower) * steps);
  },
};

/**
 * Gap objectives it would break. Its prefill's slow steps (past the replica's gap budget: its
 * tightest ITL objective, less the margin) are slow gaps for every stream decoding there, and a
 * stream's p99 absorbs only so many (about one per hundred gaps, `gap-tolerance.ts`): each
 * stream costs its chance of being pushed past its objective by them, times the decode time it
 * would then have spent for nothing (its predicted output at the replica's step). How slow a
 * slow gap is does not matter, only how many a stream is dealt. And once it decodes there, a step
 * of the bigger batch past the budget delays every stream, itself included, by the excess at
 * each of its predicted output steps (stream·ms). Steps within the budget cost nothing.
 */
function gapOverrunMs(
  r: RouteRequest,
  x: ReplicaSnapshot,
  a: ReplicaAccount,
  ctx: RouteContext,
  stepWith: number,
): number {
  const own = r.cls.objectives.itlP99Ms ?? Infinity;
  const budget = Math.min(ctx.flow.gapBudgetMs(a, r.gapShare), own);
  if (budget === Infinity) return 0;
  const uncached = Math.max(1, r.req.inputTokens - ctx.hits[x.index]);
  const stall = stallLossMs(a, ctx, ctx.flow.slowPrefillSteps(a, uncached, budget));
  const slow = stepWith - budget;
  if (slow <= 0) return stall;
  const seqs = Math.min(ctx.spec.maxNumSeqs, a.seqs + choicesOf(r.req));
  return stall + seqs * slow * Math.max(1, r.demand.output.p50);
}

/**
 * Decode time lost to `slowSteps` more slow gaps on a replica: over its gap-sensitive streams
 * decoding, each one's chance of then missing its p99 objective (from its length so far and its
 * class's output lengths) times its predicted decode time there. A long stream spares a slow gap
 * a short one cannot, so a prefill that must stall someone goes where the streams can take it.
 */
function stallLossMs(a: ReplicaAccount, ctx: RouteContext, slowSteps: number): number {
  if (slowSteps === 0 || a.decoding === 0) return 0;
  const step = a.pace * ctx.flow.decodeStepMs(a.decoding, a.decodeContextTokens);
  let lost = 0;
  for (const e of a.entries) {
    if (e.itlSloMs === Infinity || e.streamed === 0) continue;
    lost += stallRisk(e.streamed, e.slowGaps + slowSteps, e.capTokens, e.lengths) * e.expectTokens;
  }
  return lost * step;
}

const gapOverrun: Scorer = {
  name: 'gap-overrun',
  unit: 'ms',
  score(r, x, ctx) {
    const a = accountOf(x, ctx);
    return gapOverrunMs(r, x, a, ctx, stepWithMs(r, a, ctx));
  },
};

/**
 * What its LoRA adapter costs there before it can start: nothing without one or where it is
 * resident; its load time where a slot is free; and where every slot holds another adapter, the
 * load after one of the running requests has ended (the batch can take no more adapters): the
 * fewest decode steps any running request has left, at the replica's step time. Plus, wherever
 * it would take a batch slot of its own while its adapter already runs on another replica, the
 * slot it holds from others (`slotHeldMs`).
 */
function adapterMs(r: RouteRequest, x: ReplicaSnapshot, ctx: RouteContext): number {
  const adapter = r.req.adapter;
  if (adapter === undefined) return 0;
  const held = slotHeldMs(r, adapter, x, ctx);
  if (x.loras?.includes(adapter) === true) return held;
  const load = ctx.spec.adapterLoadMs ?? 0;
  if ((x.loras?.length ?? 0) < (ctx.spec.maxLoras ?? 1)) return load + held;
  const a = accountOf(x, ctx);
  let fewest = Infinity;
  for (const e of a.entries) {
    const left = Math.max(1, e.expectTokens - e.streamed);
    if (left < fewest) fewest = left;
  }
  if (fewest === Infinity) return load + held;
  return load + held + fewest * a.pace * ctx.flow.decodeStepMs(a.decoding, a.decodeContextTokens);
}

/**
 * A batch runs at most `max_loras` adapters, so a request whose adapter is not running on a
 * replica takes one of that replica's slots for as long as it runs there — a slot another
 * adapter's requests may then wait for. Where its adapter already runs elsewhere, one adapter
 * would hold two replicas' slots: priced at the request's own decode time there, so it spreads
 * only when the replicas running it are that much further behind. Nothing where its adapter
 * runs on this replica, or nowhere yet.
 */
function slotHeldMs(r: RouteRequest, adapter: string, x: ReplicaSnapshot, ctx: RouteContext) {
  const a = accountOf(x, ctx);
  if (a.adapters.has(adapter)) return 0;
  if (!ctx.ledger.replicas.some((b) => b !== a && b.adapters.has(adapter))) return 0;
  return decodeMs(r, x, ctx);
}

const adapter: Scorer = {
  name: 'adapter',
  unit: 'ms',
  score: adapterMs,
};

/**
 * When the request would finish there — queue work ahead, plus its adapter's load, plus its
 * prefill after the cache hit, plus its decode at that replica's load — all in one unit, so locality and load trade off by
 * what each costs the request in time.
 */
function completionMs(r: RouteRequest, x: ReplicaSnapshot, ctx: RouteContext, stepWith: number) {
  return (
    queueWorkMs(x, ctx) +
    adapterMs(r, x, ctx) +
    prefillAfterHitMs(r, x, ctx) +
    Math.max(1, r.demand.output.p50) * stepWith
  );
}

const completion: Scorer = {
  name: 'completion',
  unit: 'ms',
  score: (r, x, ctx) => completionMs(r, x, ctx, stepWithMs(r, accountOf(x, ctx), ctx)),
};

/**
 * What a failure there is expected to cost: the chance the attempt fails (its recent failure
 * rate; one in two for a replica on trial, its breaker half-open) times its completion there —
 * the time lost before a retry elsewhere starts. Not in the default router: a replica on trial
 * needs its one request to recover, and the host sends it no more than that.
 */
const risk: Scorer = {
  name: 'risk',
  unit: 'ms',
  score(r, x, ctx) {
    const p = x.probe === true ? Math.max(0.5, x.failureRate ?? 0) : (x.failureRate ?? 0);
    return p === 0 ? 0 : p * completionMs(r, x, ctx, stepWithMs(r, accountOf(x, ctx), ctx));
  },
};

/**
 * The default router's one scorer: `completion` plus `gap-overrun`, computed together (the
 * step of the batch with the request added is shared) — what placing the request there costs
 * in time, its own and past its neighbours' gap objectives.
 */
const expectedCost: Scorer = {
  name: 'expected-cost',
  unit: 'ms',
  score(r, x, ctx) {
    const a = accountOf(x, ctx);
    const stepWith = stepWithMs(r, a, ctx);
    return completionMs(r, x, ctx, stepWith) + gapOverrunMs(r, x, a, ctx, stepWith);
  },
};

export const SCORERS: Readonly<Record<string, Scorer>> = Object.fromEntries(
  [
    inFlight,
    queueDepth,
    kvUsage,
    kvPressure,
    prefixMiss,
    queueWork,
    prefill,
    decode,
    interference,
    gapOverrun,
    adapter,
    completion,
    risk,
    expectedCost,
  ].map((s) => [s.name, s]),
);
