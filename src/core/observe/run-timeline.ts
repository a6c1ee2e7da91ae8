/**
 * A run over time, for pictures: per time bucket, the door's outcomes by result and reason, the
 * wait it predicted and the least slack it admitted with, completions and good completions, and
 * each tenant's service; over the run, TTFT and TPOT distributions. It is fed what both hosts
 * already produce — decision records and request outcomes — so the simulator's report and the
 * gateway's dashboard draw the same things. Memory is bounded: buckets start at one second and
 * double in width (merging pairs) whenever there would be more than `maxBuckets` (240: a
 * chart's width in points).
 */
import type { DecisionRecord } from './decision-record.ts';
import { LogHistogram, type CdfPoint } from './log-histogram.ts';
import { tpotMs, type RequestOutcome } from './request-outcome.ts';

/**
 * Whether a decision record is a stream cut short after dispatch — by its deadline (`expire`), or
 * by a drain that ran out of time (`abort`): its second record, after the one that admitted it.
 */
function cutAfterDispatch(r: DecisionRecord): boolean {
  return (r.admission.result === 'expire' || r.admission.result === 'abort') && r.route !== null;
}

/**
 * Whether a decision record is a request offered at the door: a stream cut short after dispatch
 * was offered once already, when it was admitted.
 */
export function offeredAtDoor(r: DecisionRecord): boolean {
  return !cutAfterDispatch(r);
}

interface Bucket {
  /** Requests offered at the door in it. */
  offered: number;
  /** Door outcomes: `admit`, `degrade`, `reject:<reason>`, `expire:<reason>`, `cut:<reason>`, `abort`. */
  outcomes: Map<string, number>;
  completed: number;
  good: number;
  /**
   * Weighted tokens served per tenant (input × w_in + output × w_out, counted at completion). A
   * map: a tenant may be named anything, `constructor` and `__proto__` too.
   */
  service: Map<string, number>;
  waitSum: number;
  waitN: number;
  minSlack: number | null;
}

export interface TimelineData {
  readonly bucket_s: number;
  /** Each bucket's start, seconds from the run's origin. */
  readonly t_s: readonly number[];
  readonly outcomes: Readonly<Record<string, readonly number[]>>;
  /** Per second, in each bucket. */
  readonly offered_rps: readonly number[];
  readonly completed_rps: readonly number[];
  readonly good_rps: readonly number[];
  /** Each tenant's fraction of the bucket's service (null where nothing was served). */
  readonly tenant_share: Readonly<Record<string, readonly (number | null)[]>>;
  readonly predicted_wait_ms: readonly (number | null)[];
  readonly min_slack_ms: readonly (number | null)[];
  readonly ttft_cdf: readonly CdfPoint[];
  readonly tpot_cdf: readonly CdfPoint[];
}

export class RunTimeline {
  private bucketMs = 1000;
  private readonly buckets: Bucket[] = [];
  private readonly ttft = new LogHistogram();
  private readonly tpot = new LogHistogram();

  private readonly weights: { readonly input: number; readonly output: number };
  private readonly maxBuckets: number;
  private readonly originMs: number;

  /** `originMs`: the clock time the first bucket starts at (a live window's start). */
  constructor(opts: {
    readonly weights: { readonly input: number; readonly output: number };
    readonly maxBuckets?: number;
    readonly originMs?: number;
  }) {
    this.weights = opts.weights;
    this.maxBuckets = opts.maxBuckets ?? 240;
    this.originMs = opts.originMs ?? 0;
  }

  decision(r: DecisionRecord): void {
    const a = r.admission;
    const key = cutAfterDispatch(r)
      ? `cut:${a.reason ?? 'deadline'}`
      : a.result === 'reject' || a.result === 'expire'
        ? `${a.result}:${a.reason ?? (a.result === 'reject' ? 'unknown' : 'deadline')}`
        : a.result;
    const b = this.tally(r.at_ms, key, offeredAtDoor(r));
    if (a.result === 'admit' || a.result === 'degrade') {
      if (a.predicted_wait_ms !== null) {
        b.waitSum += a.predicted_wait_ms;
        b.waitN++;
      }
      if (a.slack_ms !== null) b.minSlack = Math.min(b.minSlack ?? Infinity, a.slack_ms);
    }
  }

  /** One outcome `key` at `atMs`, offered at the door or not (a client's view of its requests). */
  count(atMs: number, key: string, offered: boolean): void {
    this.tally(atMs, key, offered);
  }

  private tally(atMs: number, key: string, offered: boolean): Bucket {
    const b = this.at(atMs);
    bump(b.outcomes, key, 1);
    if (offered) b.offered++;
    return b;
  }

  /** A request ended at `atMs`; `good` by its class's SLO. */
  outcome(o: RequestOutcome, atMs: number, good: boolean): void {
    if (o.state !== 'completed') return;
    const b = this.at(atMs);
    b.completed++;
    if (good) b.good++;
    const served = o.inputTokens * this.weights.input + o.outputTokens * this.weights.output;
    bump(b.service, o.tenant, served);
    if (o.ttftMs !== undefined) this.ttft.add(o.ttftMs);
    const tpot = tpotMs(o);
    if (tpot !== undefined) this.tpot.add(tpot);
  }

  data(): TimelineData {
    const n = this.buckets.length;
    const s = this.bucketMs / 1000;
    const filled = Array.from({ length: n }, (_, i) => this.buckets[i] ?? empty());
    const keys = [...new Set(filled.flatMap((b) => [...b.outcomes.keys()]))].sort();
    const { drawn, rest } = mostServed(filled);
    const total = (b: Bucket) => [...b.service.values()].reduce((x, y) => x + y, 0);
    const restOf = (b: Bucket) => rest.reduce((x, t) => x + (b.service.get(t) ?? 0), 0);
    return {
      bucket_s: s,
      t_s: filled.map((_, i) => i * s),
      outcomes: Object.fromEntries(keys.map((k) => [k, filled.map((b) => b.outcomes.get(k) ?? 0)])),
      offered_rps: filled.map((b) => b.offered / s),
      completed_rps: filled.map((b) => b.completed / s),
      good_rps: filled.map((b) => b.good / s),
      tenant_share: Object.fromEntries([
        ...drawn.map((t) => [
          t,
          filled.map((b) => (total(b) > 0 ? (b.service.get(t) ?? 0) / total(b) : null)),
        ]),
        ...(rest.length === 0
          ? []
          : [
              [
                `${rest.length} other tenants`,
                filled.map((b) => (total(b) > 0 ? restOf(b) / total(b) : null)),
              ],
            ]),
      ]),
      predicted_wait_ms: filled.map((b) => (b.waitN > 0 ? b.waitSum / b.waitN : null)),
      min_slack_ms: filled.map((b) => b.minSlack),
      ttft_cdf: this.ttft.cdf(),
      tpot_cdf: this.tpot.cdf(),
    };
  }

  private at(clockMs: number): Bucket {
    const ms = clockMs - this.originMs;
    let i = Math.max(0, Math.floor(ms / this.bucketMs));
    while (i >= this.maxBuckets) {
      this.coarsen();
      i = Math.max(0, Math.floor(ms / this.bucketMs));
    }
    for (let j = this.buckets.length; j <= i; j++) this.buckets.push(empty());
    return this.buckets[i];
  }

  /** Doubles the bucket width, merging each pair. */
  private coarsen(): void {
    const merged: Bucket[] = [];
    for (let i = 0; i < this.buckets.length; i += 2)
      merged.push(merge(this.buckets[i], this.buckets[i + 1] ?? empty()));
    this.buckets.length = 0;
    this.buckets.push(...merged);
    this.bucketMs *= 2;
  }
}

/** The tenants a chart draws one by one: those served most, up to a legend's worth. */
const DRAWN_TENANTS = 24;

/**
 * The tenants served most over the run, by name, and the rest, which a chart draws as one:
 * hundreds of tenants would fill its legend and leave no room for the plot.
 */
function mostServed(buckets: readonly Bucket[]): { drawn: string[]; rest: string[] } {
  const served = new Map<string, number>();
  for (const b of buckets) for (const [t, v] of b.service) bump(served, t, v);
  const byService = [...served].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const names = byService.map(([t]) => t);
  if (names.length <= DRAWN_TENANTS) return { drawn: names.sort(), rest: [] };
  return {
    drawn: names.slice(0, DRAWN_TENANTS).sort(),
    rest: names.slice(DRAWN_TENANTS),
  };
}

function empty(): Bucket {
  return {
    offered: 0,
    outcomes: new Map(),
    completed: 0,
    good: 0,
    service: new Map(),
    waitSum: 0,
    waitN: 0,
    minSlack: null,
  };
}

function merge(a: Bucket, b: Bucket): Bucket {
  const add = (x: Map<string, number>, y: Map<string, number>) => {
    const out = new Map(x);
    for (const [k, v] of y) bump(out, k, v);
    return out;
  };
  return {
    offered: a.offered + b.offered,
    outcomes: add(a.outcomes, b.outcomes),
    completed: a.completed + b.completed,
    good: a.good + b.good,
    service: add(a.service, b.service),
    waitSum: a.waitSum + b.waitSum,
    waitN: a.waitN + b.waitN,
    minSlack:
      a.minSlack === null
        ? b.minSlack
        : b.minSlack === null
          ? a.minSlack
          : Math.min(a.minSlack, b.minSlack),
  };
}

function bump(m: Map<string, number>, key: string, by: number): void {
  m.set(key, (m.get(key) ?? 0) + by);
}
