/**
 * A router at run time: the filters in front (the dispatch strategy's, then the router's own),
 * the weighted sum of its scorers, its picker with its state, and what it remembers across
 * placements — the prefix index of what each replica's cache likely holds, and the sessions'
 * replicas. Scratch lists are reused, so a placement allocates nothing.
 */
import type { ReplicaSnapshot } from '../fleet/replica-snapshot.ts';
import type { Tokens } from '../request/units.ts';
import type { LlmRequest } from '../request/request.ts';
import { FILTERS } from './filters.ts';
import { PICKERS, nextUniform } from './pickers.ts';
import { PrefixIndex, type PrefixMode } from './prefix-index.ts';
import type { Filter, Picker, RouteContext, RouteRequest, RouterSpec, Scorer } from './route.ts';
import { SCORERS } from './scorers.ts';
import { SessionTable, type SessionPolicy } from './sessions.ts';

export interface RouterOptions {
  /** Filters every placement goes through before the router's own. */
  readonly leading?: readonly Filter[];
  /** Seeds the picker's tie-breaks. */
  readonly seed?: number;
  /** How the prefix index is fed, and a replica's cache size in tokens (approximate mode). */
  readonly prefix?: { readonly mode: PrefixMode; readonly capacityTokens: Tokens };
  readonly sessions?: SessionPolicy;
  /** Score only this many survivors, drawn at random (power-of-two choices; 0 or absent: all). */
  readonly choices?: number;
  /** Disaggregated serving (`FleetSpec.prefilledElsewhere`): every replica holds all but one token. */
  readonly prefilledElsewhere?: boolean;
}

export class Router {
  readonly spec: RouterSpec;
  /** What each replica's prefix cache likely holds; null for a router that does not read it. */
  readonly prefix: PrefixIndex | null;
  readonly sessions: SessionTable | null;
  private readonly filters: readonly Filter[];
  private readonly scorers: readonly Scorer[];
  private readonly weights: Float64Array;
  private readonly minMax: readonly boolean[];
  private readonly picker: Picker;
  /** The picker's state (plain data). */
  readonly state: unknown;
  private a: ReplicaSnapshot[] = [];
  private b: ReplicaSnapshot[] = [];
  private scores = new Float64Array(16);
  /** Power-of-k sampling: how many survivors are scored (0: all), and its scratch and generator. */
  private readonly choices: number;
  private readonly sampled: ReplicaSnapshot[] = [];
  private order: number[] = [];
  private readonly sampleState: { seed: number };
  private raw = new Float64Array(16);
  private zeros = new Float64Array(16);
  /** Disaggregated: the same hit, all but one prompt token, on every replica (reused). */
  private all = new Float64Array(16);
  private readonly prefilledElsewhere: boolean;

  constructor(spec: RouterSpec, options: RouterOptions = {}) {
    this.spec = spec;
    this.filters = [...(options.leading ?? []), ...spec.filters.map((name) => FILTERS[name])];
    this.scorers = spec.scorers.map((s) => SCORERS[s.name]);
    this.weights = Float64Array.from(spec.scorers, (s) => s.weight);
    this.minMax = spec.scorers.map((s) => s.minMax === true);
    this.picker = PICKERS[spec.picker];
    this.state = this.picker.initState(options.seed ?? 1);
    const p = options.prefix ?? { mode: 'approximate', capacityTokens: Infinity };
    this.prefix = spec.prefix === true ? new PrefixIndex(p.mode, 1, p.capacityTokens) : null;
    this.sessions = options.sessions === undefined ? null : new SessionTable(options.sessions);
    this.choices = options.choices ?? 0;
    this.prefilledElsewhere = options.prefilledElsewhere === true;
    this.sampleState = { seed: ((options.seed ?? 1) ^ 0x9e3779b9) >>> 0 };
  }

  /**
   * Sets `ctx.hits` for `r` over `replicas`: the prompt tokens each replica's cache is expected
   * to hold (never the whole prompt: one token at least is computed). Call before `eligible`.
   */
  prepare(req: LlmRequest, replicas: readonly ReplicaSnapshot[], ctx: RouteContext): void {
    const n = replicas.length === 0 ? 0 : replicas[replicas.length - 1].index + 1;
    if (this.prefilledElsewhere) {
      // The prompt's KV arrives from the prefill pool, wherever the request goes.
      if (this.all.length < n) this.all = new Float64Array(2 * n);
      ctx.hits = this.all.fill(Math.max(0, req.inputTokens - 1));
      return;
    }
    this.matchPrefix(req, n, ctx);
  }

  /** `ctx.hits` from the prefix index alone (zeros without one). */
  private matchPrefix(req: LlmRequest, n: number, ctx: RouteContext): void {
    if (this.prefix === null || req.prefix === undefined) {
      if (this.zeros.length < n) this.zeros = new Float64Array(2 * n);
      ctx.hits = this.zeros;
      return;
    }
    ctx.hits = this.prefix.match(req.prefix, n, req.inputTokens - 1);
  }

  /**
   * The best hit any of `replicas` is expected to give `req` (admission's expected hit). Under
   * disaggregation the prompt is still prefilled — in the prefill pool — so only the prefix
   * index counts.
   */
  bestHit(req: LlmRequest, replicas: readonly ReplicaSnapshot[], ctx: RouteContext): Tokens {
    const n = replicas.length === 0 ? 0 : replicas[replicas.length - 1].index + 1;
    this.matchPrefix(req, n, ctx);
    let best = 0;
    for (const x of replicas) if (ctx.hits[x.index] > best) best = ctx.hits[x.index];
    return best;
  }

  /** The replicas every filter lets take `r` (a scratch list, valid until the next call). */
  eligible(
    r: RouteRequest,
    replicas: readonly ReplicaSnapshot[],
    ctx: RouteContext,
  ): readonly ReplicaSnapshot[] {
    let from: readonly ReplicaSnapshot[] = replicas;
    for (const f of this.filters) {
      const out = from === this.a ? this.b : this.a;
      out.length = 0;
      f.filter(r, from, ctx, out);
      from = out;
      if (out.length === 0) break;
    }
    return from;
  }

  /**
   * Where `r` goes among `pool` (non-empty, already filtered, `prepare`d): the picker's choice by
   * score — or its session's replica, while stickiness holds.
   */
  pick(r: RouteRequest, all: readonly ReplicaSnapshot[], ctx: RouteContext): ReplicaSnapshot {
    const pool = this.choices > 0 && all.length > this.choices ? this.sample(r, all, ctx) : all;
    const n = pool.length;
    if (this.scores.length < n) {
      this.scores = new Float64Array(2 * n);
      this.raw = new Float64Array(2 * n);
    }
    const scores = this.scores;
    scores.fill(0, 0, n);
    for (let k = 0; k < this.scorers.length; k++) this.addScores(k, r, pool, ctx);
    const chosen =
      this.sticky(r, pool, ctx) ?? pool[this.picker.pick(this.state, scores, pool, r, ctx)];
    const session = r.req.session;
    if (this.sessions !== null && session !== undefined) {
      this.sessions.placed(session, chosen.index, ctx.nowMs);
    }
    return chosen;
  }

  /**
   * Power-of-`choices` sampling for large fleets: that many survivors drawn at random (seeded),
   * plus the session's replica when it survived, are all that is scored.
   */
  private sample(
    r: RouteRequest,
    all: readonly ReplicaSnapshot[],
    ctx: RouteContext,
  ): readonly ReplicaSnapshot[] {
    const out = this.sampled;
    out.length = 0;
    const n = all.length;
    // A partial Fisher–Yates shuffle of the indices: the first `choices` are the sample.
    const order = this.order;
    for (let i = 0; i < n; i++) order[i] = i;
    for (let i = 0; i < this.choices; i++) {
      const j = i + Math.floor(nextUniform(this.sampleState) * (n - i));
      const t = order[i];
      order[i] = order[j];
      order[j] = t;
      out.push(all[order[i]]);
    }
    const session = r.req.session;
    const home =
      this.sessions === null || session === undefined
        ? -1
        : this.sessions.replicaOf(session, ctx.nowMs);
    if (home >= 0 && !out.some((x) => x.index === home)) {
      const x = all.find((y) => y.index === home);
      if (x !== undefined) out.push(x);
    }
    return out;
  }

  /** `r` was sent to `replica` (approximate mode: its prompt's blocks are now cached there). */
  placed(r: RouteRequest, replica: number): void {
    if (this.prefix?.mode === 'approximate') {
      this.prefix.served(replica, r.req.prefix, r.req.inputTokens);
    }
  }

  private addScores(
    k: number,
    r: RouteRequest,
    pool: readonly ReplicaSnapshot[],
    ctx: RouteContext,
  ): void {
    const n = pool.length;
    const scorer = this.scorers[k];
    const w = this.weights[k];
    const scores = this.scores;
    if (!this.minMax[k]) {
      for (let i = 0; i < n; i++) scores[i] += w * scorer.score(r, pool[i], ctx);
      return;
    }
    const raw = this.raw;
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = 0; i < n; i++) {
      const v = scorer.score(r, pool[i], ctx);
      raw[i] = v;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    const span = hi - lo;
    if (span > 0) for (let i = 0; i < n; i++) scores[i] += (w * (raw[i] - lo)) / span;
  }

  /** The session's replica, when it is in `pool` and stickiness holds; else undefined. */
  private sticky(
    r: RouteRequest,
    pool: readonly ReplicaSnapshot[],
    ctx: RouteContext,
  ): ReplicaSnapshot | undefined {
    const session = r.req.session;
    if (this.sessions === null || session === undefined) return undefined;
    const replica = this.sessions.replicaOf(session, ctx.nowMs);
    if (replica < 0) return undefined;
    let at = -1;
    let best = Infinity;
    for (let i = 0; i < pool.length; i++) {
      if (pool[i].index === replica) at = i;
      if (this.scores[i] < best) best = this.scores[i];
    }
    if (at < 0) return undefined;
    const { mode, slackMs } = this.sessions.policy;
    return mode === 'hard' || this.scores[at] <= best + slackMs ? pool[at] : undefined;
  }
}
