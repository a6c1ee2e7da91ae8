/**
 * A router at run time: the filters in front (the dispatch strategy's, then the router's own),
 * the weighted sum of its scorers, and its picker with its state. Scratch lists are reused, so
 * a placement allocates nothing.
 */
import type { ReplicaSnapshot } from '../fleet/replica-snapshot.ts';
import { FILTERS } from './filters.ts';
import { PICKERS } from './pickers.ts';
import type { Filter, Picker, RouteContext, RouteRequest, RouterSpec, Scorer } from './route.ts';
import { SCORERS } from './scorers.ts';

export class Router {
  readonly spec: RouterSpec;
  private readonly filters: readonly Filter[];
  private readonly scorers: readonly Scorer[];
  private readonly weights: Float64Array;
  private readonly picker: Picker;
  /** The picker's state (plain data). */
  readonly state: unknown;
  private a: ReplicaSnapshot[] = [];
  private b: ReplicaSnapshot[] = [];
  private scores = new Float64Array(16);

  /** `leading`: filters every placement goes through before the router's own. */
  constructor(spec: RouterSpec, leading: readonly Filter[] = []) {
    this.spec = spec;
    this.filters = [...leading, ...spec.filters.map((name) => FILTERS[name])];
    this.scorers = spec.scorers.map((s) => SCORERS[s.name]);
    this.weights = Float64Array.from(spec.scorers, (s) => s.weight);
    this.picker = PICKERS[spec.picker];
    this.state = this.picker.initState();
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

  /** Where `r` goes among `pool` (non-empty, already filtered): the picker's choice by score. */
  pick(r: RouteRequest, pool: readonly ReplicaSnapshot[], ctx: RouteContext): ReplicaSnapshot {
    const n = pool.length;
    if (this.scores.length < n) this.scores = new Float64Array(2 * n);
    const scores = this.scores;
    scores.fill(0, 0, n);
    for (let k = 0; k < this.scorers.length; k++) {
      const scorer = this.scorers[k];
      const w = this.weights[k];
      for (let i = 0; i < n; i++) scores[i] += w * scorer.score(r, pool[i], ctx);
    }
    return pool[this.picker.pick(this.state, scores, n)];
  }
}
