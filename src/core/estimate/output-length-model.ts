/**
 * Learns output lengths online, per (class, tenant) and per class, from finished requests, and
 * predicts p50/p90 for a new one. The most specific history with enough samples wins, and the
 * prediction says which: the tenant's own in this class at the reasoning effort the request
 * asked for (`tenant_effort`; a high effort thinks many times as long as a low one), then the
 * tenant's own at any effort (`tenant`), then the class's, then the configured prior (the
 * class's own where the policy gives one: a reasoning class's replies are not a chat's). Memory
 * is bounded: a window of at most `window` values per (class, tenant) and (class, tenant,
 * effort) seen, plus one per class. An output cut at its request's max_tokens is kept as what
 * it is, a lower bound of the length the request would have reached (`CensoredWindow`): under a
 * load whose requests all run to their cap, the model learns the cap.
 *
 * The outputs a history has seen are those of the requests that ended first. While most of what
 * it dispatched is still running — a cold start under a flood, where the first few hundred
 * replies to end are the shortest of a few thousand — they are the short tail, and a p50 learned
 * from them would promise the running requests end within a few steps. So until half of the
 * requests dispatched have ended, a learned p50 or p90 is taken no lower than the prior's.
 *
 * KV is reserved for the p90, and a p90 that is only the prior's guess is the one number here
 * nothing has checked: a prior far below the replies fills the replicas in a flood's first
 * second with requests that outgrow their reservations together, long before one ends to say
 * so, and the engines preempt them. So while only the prior speaks, a request reserves KV for
 * `reserve` tokens of output (within its cap) where that is more than the prior's p90. After
 * that, while most of what was dispatched still runs, for twice the longest output that ended
 * (up to `reserve`): with heavy-tailed replies the first to end say little of the rest.
 *
 * A restarted gateway need not start cold: `snapshot` gives what was learned, and `restore`
 * takes up from it as if the model had run on (learned-state.ts is its file format).
 */
import type { OutputPrediction } from '../request/demand.ts';
import type { SloClassName } from '../request/slo-classes.ts';
import type { Tokens } from '../request/units.ts';
import type { ReasoningEffort } from '../request/request.ts';
import { CensoredWindow } from '../stats/censored-window.ts';

export interface OutputLengthModelOptions {
  /** Most recent outputs remembered per (class, tenant) and per class. */
  readonly window?: number;
  /** Outputs a window needs before its percentiles are trusted over the next fallback. */
  readonly minSamples?: number;
  readonly prior: { readonly p50: Tokens; readonly p90: Tokens };
  /** Output tokens KV is reserved for while only the prior speaks (default: the prior's p90). */
  readonly reserve?: Tokens;
  /** Classes whose replies are not like the rest's: a prior (and reserve) of their own. */
  readonly byClass?: Partial<Record<SloClassName, Prior>>;
}

/** What is assumed of a class's outputs before they are learned. */
export interface Prior {
  readonly p50: Tokens;
  readonly p90: Tokens;
  /** Output tokens KV is reserved for while only the prior speaks (default: its p90). */
  readonly reserve?: Tokens;
}

/** One history: its recent outputs, and how many of its requests were dispatched and ended. */
interface History {
  readonly outputs: CensoredWindow;
  started: number;
  ended: number;
}

interface ClassHistory {
  readonly prior: Required<Prior>;
  readonly all: History;
  // Nested maps, not `${cls}/${tenant}` keys: the hot path builds no strings.
  readonly byTenant: Map<string, History>;
  /** Each tenant's at one reasoning effort, for the requests that asked one. */
  readonly byEffort: Map<ReasoningEffort, Map<string, History>>;
}

function history(window: number): History {
  return { outputs: new CensoredWindow(window), started: 0, ended: 0 };
}

/**
 * One history as it is saved and restored: its outputs oldest first, which of them were cut at
 * their max_tokens (indexes into `outputs`), and how many of its requests have ended.
 */
export interface HistorySnapshot {
  readonly outputs: readonly Tokens[];
  readonly capped: readonly number[];
  readonly ended: number;
}

export interface TenantSnapshot extends HistorySnapshot {
  readonly tenant: string;
  /** The effort its requests asked for; absent: the tenant's history at any effort. */
  readonly reasoning_effort?: ReasoningEffort;
}

/** What the model learned of one class: the class's history and its tenants' own. */
export interface ClassSnapshot extends HistorySnapshot {
  readonly cls: SloClassName;
  readonly tenants: readonly TenantSnapshot[];
}

/** Tenants' histories (at any effort or at one) a snapshot keeps a class: the most ended. */
export const SNAPSHOT_TENANTS = 1000;

/** Output lengths as a distribution: the fraction of outputs of at most `tokens`. */
export interface LengthDistribution {
  cdf(tokens: Tokens): number;
}

export class OutputLengthModel {
  private readonly window: number;
  private readonly minSamples: number;
  private readonly prior: Required<Prior>;
  private readonly byClass = new Map<SloClassName, Required<Prior>>();
  private readonly classes = new Map<SloClassName, ClassHistory>();

  constructor(options: OutputLengthModelOptions) {
    const { window = 256, minSamples = 20, prior, reserve = prior.p90, byClass = {} } = options;
    if (!Number.isInteger(window) || window < 1) {
      throw new RangeError(`OutputLengthModel window: expected an integer ≥ 1, got ${window}`);
    }
    // A threshold the window can never reach would silently pin every prediction to a fallback.
    if (!Number.isInteger(minSamples) || minSamples < 1 || minSamples > window) {
      throw new RangeError(
        `OutputLengthModel minSamples: expected an integer in [1, ${window}], got ${minSamples}`,
      );
    }
    this.window = window;
    this.minSamples = minSamples;
    this.prior = checkedPrior('prior', { ...prior, reserve });
    for (const [cls, p] of Object.entries(byClass) as [SloClassName, Prior][]) {
      this.byClass.set(cls, checkedPrior(`prior of ${cls}`, p));
    }
  }

  /**
   * Records one finished request's output length in its tenant's and its class's windows;
   * `capped`: it was cut at its max_tokens, so its true length is at least that.
   */
  observe(
    cls: SloClassName,
    tenant: string,
    outputTokens: Tokens,
    capped = false,
    effort?: ReasoningEffort,
  ): void {
    if (!(outputTokens >= 0) || !Number.isFinite(outputTokens)) {
      throw new RangeError(`OutputLengthModel.observe: expected tokens ≥ 0, got ${outputTokens}`);
    }
    const c = this.classHistory(cls);
    for (const h of this.histories(c, tenant, effort)) {
      h.outputs.add(outputTokens, capped);
      h.ended++;
    }
  }

  /**
   * A request of `cls` from `tenant` (at `effort`) was dispatched: it will end, and tell its
   * length then (each of its `outputs`, one per choice).
   */
  started(cls: SloClassName, tenant: string, outputs = 1, effort?: ReasoningEffort): void {
    for (const h of this.histories(this.classHistory(cls), tenant, effort)) h.started += outputs;
  }

  /** A dispatched request ended without a natural length (cancelled, failed, cut). */
  abandoned(cls: SloClassName, tenant: string, outputs = 1, effort?: ReasoningEffort): void {
    for (const h of this.histories(this.classHistory(cls), tenant, effort)) h.ended += outputs;
  }

  /** The histories a request's length joins: its class's, its tenant's, and at its effort. */
  private histories(c: ClassHistory, tenant: string, effort?: ReasoningEffort): History[] {
    const found = this.found;
    found[0] = c.all;
    found[1] = this.tenantHistory(c.byTenant, tenant);
    if (effort === undefined) {
      found.length = 2;
      return found;
    }
    let byTenant = c.byEffort.get(effort);
    if (byTenant === undefined) c.byEffort.set(effort, (byTenant = new Map()));
    found[2] = this.tenantHistory(byTenant, tenant);
    return found;
  }
  /** `histories`' answer, reused: a request's end allocates nothing here. */
  private readonly found: History[] = [];

  /**
   * What the model has learned, to be restored by another (a restarted gateway): each class's
   * window and, of its tenants, the `SNAPSHOT_TENANTS` with the most ended requests.
   */
  snapshot(): ClassSnapshot[] {
    return [...this.snapshotLazily()].map((c) => ({ ...c, tenants: [...c.tenants] }));
  }

  /**
   * The snapshot, each tenant's history copied only as it is read: a host writing a large one
   * can read it in slices, between other work (a gateway's streams).
   */
  *snapshotLazily(): Generator<
    HistorySnapshot & { readonly cls: SloClassName; readonly tenants: Iterable<TenantSnapshot> }
  > {
    for (const [cls, c] of this.classes) {
      const all: [string, ReasoningEffort | undefined, History][] = [];
      for (const [tenant, h] of c.byTenant) all.push([tenant, undefined, h]);
      for (const [effort, byTenant] of c.byEffort) {
        for (const [tenant, h] of byTenant) all.push([tenant, effort, h]);
      }
      const kept = all
        .filter(([, , h]) => h.outputs.size > 0)
        .sort(
          ([a, ea = '', x], [b, eb = '', y]) => y.ended - x.ended || order(a, b) || order(ea, eb),
        )
        .slice(0, SNAPSHOT_TENANTS);
      const tenants = (function* () {
        for (const [tenant, effort, h] of kept) {
          const at = effort === undefined ? {} : { reasoning_effort: effort };
          yield { tenant, ...at, ...historySnapshot(h) };
        }
      })();
      yield { cls, ...historySnapshot(c.all), tenants };
    }
  }

  /**
   * Takes up where the model that saved `classes` left off, as if it had run on: each window
   * holds the saved outputs (the most recent `window` of them) and counts their ended
   * requests, none running. A class saved replaces what this model has of it.
   */
  restore(classes: readonly ClassSnapshot[]): void {
    for (const s of classes) {
      const c: ClassHistory = {
        prior: this.priorOf(s.cls),
        all: restored(this.window, s),
        byTenant: new Map(),
        byEffort: new Map(),
      };
      for (const t of s.tenants) {
        const effort = t.reasoning_effort;
        let byTenant = c.byTenant;
        if (effort !== undefined) {
          byTenant = c.byEffort.get(effort) ?? new Map();
          c.byEffort.set(effort, byTenant);
        }
        byTenant.set(t.tenant, restored(this.window, t));
      }
      this.classes.set(s.cls, c);
    }
  }

  private classHistory(cls: SloClassName): ClassHistory {
    let c = this.classes.get(cls);
    if (c === undefined) {
      const all = history(this.window);
      c = { prior: this.priorOf(cls), all, byTenant: new Map(), byEffort: new Map() };
      this.classes.set(cls, c);
    }
    return c;
  }

  private tenantHistory(byTenant: Map<string, History>, tenant: string): History {
    let own = byTenant.get(tenant);
    if (own === undefined) {
      own = history(this.window);
      byTenant.set(tenant, own);
    }
    return own;
  }

  /**
   * Predicted output for a new request. p50 and p90 are whole tokens ≥ 1, never above `cap`
   * (the request's max_tokens or its class's output budget), and p90 ≥ p50.
   */
  predict(
    cls: SloClassName,
    tenant: string,
    cap?: Tokens,
    effort?: ReasoningEffort,
  ): OutputPrediction {
    const c = this.classes.get(cls);
    if (c !== undefined) {
      const own = this.learned(c, tenant, effort);
      if (own !== undefined) return fromHistory(own.history, c.prior, own.source, cap);
      if (c.all.outputs.size >= this.minSamples) return fromHistory(c.all, c.prior, 'class', cap);
    }
    // Without history the low quantile is unknown: 1 token, the safe end.
    const p = c?.prior ?? this.priorOf(cls);
    return shape(1, p.p50, p.p90, 'prior', cap, p.reserve);
  }

  private priorOf(cls: SloClassName): Required<Prior> {
    return this.byClass.get(cls) ?? this.prior;
  }

  /**
   * The history `predict` would use, as a distribution of output lengths; undefined while the
   * model has only its prior (nothing is known of the shape then).
   */
  distribution(
    cls: SloClassName,
    tenant: string,
    effort?: ReasoningEffort,
  ): LengthDistribution | undefined {
    const c = this.classes.get(cls);
    if (c === undefined) return undefined;
    const own = this.learned(c, tenant, effort);
    if (own !== undefined) return own.history.outputs;
    return c.all.outputs.size >= this.minSamples ? c.all.outputs : undefined;
  }

  /** The tenant's own history with enough samples: at `effort`'s, else at any effort's. */
  private learned(c: ClassHistory, tenant: string, effort?: ReasoningEffort): Own | undefined {
    const enough = (h: History | undefined) => h !== undefined && h.outputs.size >= this.minSamples;
    const atEffort = effort === undefined ? undefined : c.byEffort.get(effort)?.get(tenant);
    if (enough(atEffort)) return { history: atEffort as History, source: 'tenant_effort' };
    const own = c.byTenant.get(tenant);
    return enough(own) ? { history: own as History, source: 'tenant' } : undefined;
  }
}

/** A tenant's own history, at the request's reasoning effort or at any. */
type Own = { readonly history: History; readonly source: 'tenant_effort' | 'tenant' };

/** Strings in code-unit order: a snapshot lists its histories the same way every time. */
const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function historySnapshot(h: History): HistorySnapshot {
  const { values, bounds } = h.outputs.oldestFirst();
  const capped: number[] = [];
  bounds.forEach((b, i) => b && capped.push(i));
  return { outputs: values, capped, ended: h.ended };
}

function restored(window: number, s: HistorySnapshot): History {
  const h = history(window);
  const capped = new Set(s.capped);
  const from = Math.max(0, s.outputs.length - window);
  for (let i = from; i < s.outputs.length; i++) h.outputs.add(s.outputs[i], capped.has(i));
  h.ended = h.started = Math.max(s.ended, s.outputs.length);
  return h;
}

function fromHistory(
  h: History,
  prior: Required<Prior>,
  source: 'tenant_effort' | 'tenant' | 'class',
  cap?: Tokens,
): OutputPrediction {
  const w = h.outputs;
  let p50 = w.quantile(50);
  let p90 = w.quantile(90);
  // Most of its requests still run: what it saw end is the short tail (see the top).
  if (2 * h.ended < h.started) {
    p50 = Math.max(p50, prior.p50);
    p90 = Math.max(p90, prior.p90);
    // Those still running have streamed about as far as the longest that ended, and as
    // likely as not run as far again: KV for twice that, up to the cold reserve.
    const kv = Math.min(prior.reserve, 2 * w.quantile(100));
    return shape(w.quantile(10), p50, p90, source, cap, kv);
  }
  return shape(w.quantile(10), p50, p90, source, cap);
}

function checkedPrior(what: string, p: Prior): Required<Prior> {
  const { p50, p90, reserve = p90 } = p;
  if (!(p50 > 0) || !(p90 >= p50) || !Number.isFinite(p90)) {
    throw new RangeError(
      `OutputLengthModel ${what}: expected 0 < p50 ≤ p90, got p50=${p50} p90=${p90}`,
    );
  }
  if (!Number.isInteger(reserve) || reserve < 1) {
    throw new RangeError(
      `OutputLengthModel ${what} reserve: expected an integer ≥ 1, got ${reserve}`,
    );
  }
  return { p50, p90, reserve };
}

function shape(
  p10: number,
  p50: number,
  p90: number,
  source: OutputPrediction['source'],
  cap: Tokens | undefined,
  reserve = 0,
): OutputPrediction {
  const limit = cap ?? Infinity;
  const r10 = Math.max(1, ceilTokens(Math.min(p10, limit)));
  // Max with the lower quantile keeps the order even if interpolation rounding nudged one below.
  const r50 = Math.max(r10, ceilTokens(Math.min(p50, limit)));
  const r90 = Math.max(r50, ceilTokens(Math.min(p90, limit)));
  const kv = Math.min(reserve, limit);
  return kv > r90
    ? { p10: r10, p50: r50, p90: r90, source, reserve: kv }
    : { p10: r10, p50: r50, p90: r90, source };
}

/**
 * Interpolation between whole tokens can land a hair above an integer (numpy-linear p90 of
 * [10, 10, 10, 50] computes as 38.00000000000001); that noise must not cost a whole extra token.
 */
function ceilTokens(x: number): number {
  return Math.ceil(x - 1e-9);
}
