/**
 * When a long prompt gets its turn. A long prompt — its prefill alone over a step's gap budget —
 * goes only to a replica whose streams can absorb the stall it makes (`FlowControl.fit`, slow):
 * each far enough into its output for its p99 to hide one more slow gap, or likely to end first.
 * Under load the dispatcher holds a few replicas for long prompts and feeds the rest
 * (`../dispatch/held-replicas.ts`), so long prompts take turns: a held replica runs on until its
 * streams can spare the stall, takes the long prompts that share one step's token budget, and is
 * ready again when their own streams can spare the next, and its others, a slow gap more each,
 * can too. From the ledger alone, this is when the
 * turn of a long prompt behind others comes — before any long prompt has waited, nothing else
 * knows it, and a wait learned from prompts placed on idle replicas says nothing of it.
 */
import type { Ms, Tokens } from '../request/units.ts';
import type {
  LedgerEntry,
  LengthCdf,
  ReplicaAccount,
  ReplicaLedger,
} from '../fleet/replica-ledger.ts';
import type { ReplicaSnapshot } from '../fleet/replica-snapshot.ts';
import type { FlowControl } from '../routing/flow-control.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';
import type { SloClass } from '../request/slo-classes.ts';
import { MAX_SPARED_STALLS, stepsUntilSpare, type StreamAtRisk } from '../routing/gap-tolerance.ts';

/** A long prompt as its turn is predicted, behind `ahead` others. */
export interface LongTurnAsk {
  /** What it must prefill. */
  readonly promptTokens: Tokens;
  /** Its choices: each a stream its turn's successors must wait on. */
  readonly seqs: number;
  /** Its class: its gap objective, and which holds are not its. */
  readonly cls: SloClass;
  /** Its class's output lengths, when known: how soon a turn's streams can spare the next. */
  readonly lengths: LengthCdf | undefined;
  /** Long prompts ahead of it, and their mean prompt. */
  readonly ahead: number;
  readonly aheadMeanTokens: Tokens;
}

/** The dispatcher's holds (`../dispatch/held-replicas.ts`), as the turns read them. */
export interface LongHolds {
  /** The request `replica` is held for, while it waits. */
  heldFor(replica: number): { readonly cls: SloClass } | undefined;
  /** The most of `replicas` held at once. */
  atMost(replicas: number): number;
}

/** What the turns are read from: the control plane's account of each replica, and its rules. */
export interface LongTurnFleet {
  readonly ledger: ReplicaLedger;
  readonly flow: FlowControl;
  readonly replicas: readonly ReplicaSnapshot[];
  /** The replicas held for long prompts (at most a few, which serve them under load). */
  readonly holds: LongHolds;
  /** A decode step of the fleet's mean batch (each replica's at its pace). */
  readonly decodeStepMs: Ms;
  /** Its `maxBatchedTokens`, a step's prompt budget: the long prompts one turn takes. */
  readonly spec: Pick<FleetSpec, 'maxBatchedTokens'>;
}

/** When a long prompt's turn comes, and what it shares then. */
export interface LongTurn {
  /** Until it is placed. */
  readonly waitMs: Ms;
  /** The prefill of the long prompts ahead whose turn it joins: its first token waits for it. */
  readonly sharedPrefillMs: Ms;
}

/**
 * When the turn of `ask` comes: each replica's first turn when its streams, nothing new
 * joining, could spare the stall (`stepsUntilSpare`, after what it is prefilling), and every
 * turn after at the pace of one — a turn's prompts prefilled, then their own streams run to
 * where they could spare the next — and no sooner than the streams there now could spare every
 * stall so far and the next: each turn is a slow gap more for every one of them, and a stream
 * that has taken as many as its length hides takes no more until it ends. As many replicas as
 * may be held at once (`holds.atMost`),
 * those whose turns come first, serve long prompts — none held for a request of a later class;
 * the long prompts ahead fill turns up to the step's budget (one alone when larger), and `ask`
 * joins the last of theirs if it fits.
 */
export function longTurn(ask: LongTurnAsk, fleet: LongTurnFleet): LongTurn {
  const { ledger, flow } = fleet;
  const budget = fleet.spec.maxBatchedTokens;
  const slow = Math.ceil(ask.promptTokens / budget);
  const limit = flow.stallRiskLimit;
  const itlSloMs = ask.cls.objectives.itlP99Ms ?? Infinity;
  const n = fleet.replicas.length;
  // The turn that is its own: the prompts ahead of it, packed into turns, and it in the last
  // one's room when that holds it.
  const perTurn = Math.max(1, Math.floor(budget / Math.max(1, ask.aheadMeanTokens)));
  const aheadTurns = Math.ceil(ask.ahead / perTurn);
  const lastTurnTokens = (ask.ahead - (aheadTurns - 1) * perTurn) * ask.aheadMeanTokens;
  const joins = ask.ahead > 0 && lastTurnTokens + ask.promptTokens <= budget;
  const turn = joins ? aheadTurns - 1 : aheadTurns;
  // A turn of those ahead: their prompts prefilled, then their streams, from nothing streamed,
  // run to where they could spare the next stall.
  const turnTokens = perTurn * ask.aheadMeanTokens;
  const fresh: StreamAtRisk = {
    streamed: 0,
    slowGaps: 0,
    capTokens: Infinity,
    lengths: ask.lengths,
    seqs: perTurn * ask.seqs,
    itlSloMs,
  };
  const freshSteps = turn === 0 ? 0 : stepsUntilSpare([fresh], slow, limit);
  const turns: ReplicaTurns[] = [];
  const priority = ask.cls.priority;
  const turnPrefillMs = turn === 0 ? 0 : flow.prefillMs(turnTokens);
  for (const r of fleet.replicas) {
    // A replica held for a request of a later class is not its turn's: that one waits on it.
    if ((fleet.holds.heldFor(r.index)?.cls.priority ?? -Infinity) > priority) continue;
    const a = ledger.replicas[r.index];
    const pace = a.entries.length === 0 ? 1 : a.pace;
    const stepMs = pace * fleet.decodeStepMs;
    const prefillMs =
      a.pendingPrefillTokens > 0 ? pace * flow.prefillMs(a.pendingPrefillTokens) : 0;
    turns.push({
      first: [prefillMs + readySteps(a, slow, limit) * stepMs],
      every: pace * turnPrefillMs + freshSteps * stepMs,
      account: a,
      prefillMs,
      stepMs,
    });
  }
  const servers = soonest(turns, Math.min(fleet.holds.atMost(n), turns.length));
  for (const r of servers) laterTurns(r, slow, limit, turn);
  return {
    waitMs: nthTurnMs(servers, turn),
    sharedPrefillMs: joins
      ? flow.prefillMs(lastTurnTokens + ask.promptTokens) - flow.prefillMs(ask.promptTokens)
      : 0,
  };
}

/**
 * A replica's turns: the first few as found, `first[k]` (each no sooner than the one before
 * plus `every`), then one every `every` after the last of them.
 */
interface ReplicaTurns {
  readonly first: Ms[];
  readonly every: Ms;
  readonly account: ReplicaAccount;
  /** What it is prefilling, and its decode step: what its streams' steps are timed by. */
  readonly prefillMs: Ms;
  readonly stepMs: Ms;
}

/** The `servers` replicas whose first turns come soonest. */
function soonest(turns: readonly ReplicaTurns[], servers: number): ReplicaTurns[] {
  return turns
    .map((r, i) => ({ r, i }))
    .sort((x, y) => x.r.first[0] - y.r.first[0] || x.i - y.i)
    .slice(0, servers)
    .map((x) => x.r);
}

/**
 * Adds `r`'s turns after its first, up to its `turn`-th: turn k no sooner than its streams now
 * could spare k + 1 stalls of `slow` steps, until that is no sooner than when they could spare
 * any number — when those short of it have ended — after which one comes every `every`.
 */
function laterTurns(r: ReplicaTurns, slow: number, limit: number, turn: number): void {
  const { first, every, account, prefillMs, stepMs } = r;
  if (turn === 0) return;
  // Past the stalls any stream spares, a turn waits for the streams there now to end.
  const endedMs = prefillMs + readySteps(account, MAX_SPARED_STALLS + 1, limit) * stepMs;
  for (let k = 1; k <= turn; k++) {
    const stalls = (k + 1) * slow;
    const spareMs =
      stalls > MAX_SPARED_STALLS
        ? endedMs
        : prefillMs + readySteps(account, stalls, limit) * stepMs;
    first.push(Math.max(first[k - 1] + every, spareMs));
    if (spareMs >= endedMs) return;
  }
}

/** How many of `r`'s turns have come by `t`. */
function turnsBy(r: ReplicaTurns, t: Ms): number {
  const { first, every } = r;
  const last = first[first.length - 1];
  if (t >= last) return first.length + (every > 0 ? Math.floor((t - last) / every) : Infinity);
  let c = 0;
  while (first[c] <= t) c++;
  return c;
}

/** The `turn`-th (from 0) of `chosen`'s turns: the least time by which `turn + 1` have come. */
function nthTurnMs(chosen: readonly ReplicaTurns[], turn: number): Ms {
  if (chosen.length === 0) return Infinity;
  const count = (t: Ms) => {
    let c = 0;
    for (const r of chosen) c += turnsBy(r, t);
    return c;
  };
  let lo = chosen[0].first[0];
  if (count(lo) > turn) return lo;
  // The soonest replica alone has had turn + 2 turns by then.
  const head = chosen[0];
  let hi = head.first[head.first.length - 1] + (turn + 1) * head.every;
  // count(lo) ≤ turn < count(hi): halve to within a millisecond's hundredth.
  while (hi - lo > 0.01) {
    const mid = (lo + hi) / 2;
    if (count(mid) > turn) hi = mid;
    else lo = mid;
  }
  return hi;
}

/** What `readySteps` last found for a replica and a stall: valid while its batch is the same. */
interface ReadySteps {
  readonly version: number;
  /** A stream of the batch, and how far it had streamed then: the steps run since. */
  readonly ref: LedgerEntry | undefined;
  readonly refStreamed: number;
  readonly steps: number;
}
/** By replica, by the slow steps asked of its streams. */
const READY = new WeakMap<ReplicaAccount, (ReadySteps | undefined)[]>();

/**
 * `stepsUntilSpare` of `a`'s streams, remembered while its batch stays the same: every stream of
 * an unchanged batch advances a token a step, so the steps left are those found less the steps
 * one of them has run since. Asked at every long prompt's decision over every replica, the
 * search was a third of a simulated flood's time on 64 replicas.
 */
function readySteps(a: ReplicaAccount, slow: number, limit: number): number {
  let bySlow = READY.get(a);
  const known = bySlow?.[slow];
  if (known !== undefined && known.version === a.batchVersion) {
    const ran = known.ref === undefined ? 0 : known.ref.streamed - known.refStreamed;
    return Math.max(0, known.steps - ran);
  }
  const steps = stepsUntilSpare(a.entries, slow, limit);
  const ref = a.entries.find((e) => e.streamed > 0);
  if (bySlow === undefined) READY.set(a, (bySlow = []));
  bySlow[slow] = { version: a.batchVersion, ref, refStreamed: ref?.streamed ?? 0, steps };
  return steps;
}
