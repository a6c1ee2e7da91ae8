/**
 * Builds the fleet summary admission reads: KV left on the roomiest replica, the mean decode
 * batch and its step time, the class's queue budget and queue-delay target, and the predicted
 * wait of a new request — zero when it fits somewhere now with nothing queued ahead; else the
 * queue model (the queue ahead over the measured dispatch rate, never less than the oldest
 * waiting request has waited; a long prompt by its turn on a replica whose streams can spare
 * its stall; before any rate is measured, a stand-in bounded by what the replicas can hold; and
 * no sooner than enough running requests end when the replicas are full), calibrated by the
 * waits requests of its size had. The rules and their reasons: ../admission/README.md.
 */
import { type SloClassName, DEFAULT_SLO_CLASSES, type SloClass } from '../request/slo-classes.ts';
import { largestKv, mostFreeKv, type ReplicaSnapshot } from '../fleet/replica-snapshot.ts';
import type { FleetLoad, QueueAhead, WaitAsk } from './fleet-load.ts';
import type { Ms, Tokens } from '../request/units.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';
import type { QueueBudgets } from './queue-budget.ts';
import type { WaitCalibration } from './wait-calibration.ts';
import type { QueueDelayControl } from '../queueing/queue-delay.ts';
import type { QueueView } from '../queueing/queue-view.ts';
import type { ReplicaLedger } from '../fleet/replica-ledger.ts';
import type { FlowControl } from '../routing/flow-control.ts';
import type { RouteRequest } from '../routing/route.ts';
import type { OutputLengthModel } from './output-length-model.ts';
import { longTurn, type LongHolds, type LongTurn } from './long-turns.ts';
import { heldAtPace, holdAlike, kvSlotsShort } from './replica-holds.ts';
import type { TurnsView } from '../queueing/kept-turns.ts';

/** A long prompt's turn is predicted within about this factor (the lengths of the streams it
 * waits on, and the work beside them, vary): its sure wait is that much longer. */
const LONG_TURN_SPREAD = 1.5;

/** What the summary learns from besides the dispatcher: all optional, each adds a figure. */
export interface SummaryLearners {
  readonly classes?: Readonly<Record<SloClassName, SloClass>>;
  readonly budgets?: QueueBudgets;
  readonly calibration?: WaitCalibration;
  readonly queueDelay?: QueueDelayControl;
  /** Each class's output lengths: how soon a long prompt's streams can spare the next stall. */
  readonly outputs?: Pick<OutputLengthModel, 'distribution'>;
  /** Turns kept by requests refused for their wait: each waits ahead of a new request. */
  readonly turns?: TurnsView;
}

/** What the summary asks of placement (the dispatcher answers it). */
export interface PlacementView {
  /** The control plane's account of each replica. */
  readonly ledger: ReplicaLedger;
  readonly flow: FlowControl;
  isLongPrompt(promptTokens: Tokens, itlSloMs: number, seqs?: number): boolean;
  /** The replicas held for long prompts: at most a few at once, and for which request. */
  readonly holds: LongHolds;
  /** Whether `r` would be placed at `nowMs`, were it at the front. */
  wouldFit(r: RouteRequest, replicas: readonly ReplicaSnapshot[], nowMs: Ms): boolean;
  /** Whether some replica has room to hold `r` once its prefills are done. */
  couldHold(r: RouteRequest, replicas: readonly ReplicaSnapshot[]): boolean;
}

export function summarizeFleet(
  spec: FleetSpec,
  queue: QueueView,
  placement: PlacementView,
  replicas: readonly ReplicaSnapshot[],
  nowMs: number,
  learners: SummaryLearners = {},
): FleetLoad {
  // Snapshots come in index order; a fleet may leave out replicas that are not ready.
  placement.ledger.resize(replicas.length === 0 ? 0 : replicas[replicas.length - 1].index + 1);
  return new FleetSummary(spec, queue, placement, replicas, nowMs, learners);
}

/**
 * One decision's summary. A class, not an object literal with getters: V8 allocates a literal's
 * accessors in the old generation, and their closures, with everything they capture (every
 * replica's snapshot), would then survive each young-generation collection — per decision.
 */
class FleetSummary implements FleetLoad {
  readonly spec: FleetSpec;
  readonly readyReplicas: number;
  readonly decodeBatch: number;
  readonly decodeContextTokens: Tokens;
  readonly #queue: QueueView;
  readonly #placement: PlacementView;
  readonly #ledger: ReplicaLedger;
  readonly #flow: FlowControl;
  readonly #replicas: readonly ReplicaSnapshot[];
  readonly #nowMs: number;
  readonly #classes: Readonly<Record<SloClassName, SloClass>>;
  readonly #learners: SummaryLearners;
  /** Ready replicas, at least 1 (the per-replica figures divide by it). */
  readonly #n: number;
  // The figures below cost a profile evaluation or a pass over the replicas: computed only
  // when a policy asks (the baselines never do).
  #decodeStepMs: number | undefined;
  #stepMs: number | undefined;
  #maxFree: number | undefined;
  /** The queue's head, asked by the queue-delay control and the wait model alike: scanned once. */
  #oldest: { priority: number; tenant?: string; ms: number } | undefined;

  constructor(
    spec: FleetSpec,
    queue: QueueView,
    placement: PlacementView,
    replicas: readonly ReplicaSnapshot[],
    nowMs: number,
    learners: SummaryLearners,
  ) {
    const ledger = placement.ledger;
    this.spec = spec;
    this.#queue = queue;
    this.#placement = placement;
    this.#ledger = ledger;
    this.#flow = placement.flow;
    this.#replicas = replicas;
    this.#nowMs = nowMs;
    this.#classes = learners.classes ?? DEFAULT_SLO_CLASSES;
    this.#learners = learners;
    this.#n = Math.max(1, replicas.length);
    this.readyReplicas = replicas.length;
    this.decodeBatch = ledger.decoding / this.#n;
    this.decodeContextTokens =
      ledger.decoding > 0 ? ledger.decodeContextTokens / ledger.decoding : 0;
  }

  get maxFreeKvTokens(): Tokens {
    return (this.#maxFree ??= mostFreeKv(this.#replicas, this.#ledger, this.spec));
  }

  get largestKvTokens(): Tokens {
    return largestKv(this.#replicas, this.spec);
  }

  get decodeStepMs(): Ms {
    return (this.#decodeStepMs ??= this.#flow.decodeStepMs(
      Math.max(1, Math.round(this.decodeBatch)),
      this.#ledger.decodeContextTokens / this.#n,
    ));
  }

  get stepMs(): Ms {
    if (this.#stepMs !== undefined) return this.#stepMs;
    const a = this.#ledger.replicas;
    let sum = 0;
    for (const { index: i } of this.#replicas) sum += a[i].pace * this.#flow.profileStepMs(a[i]);
    return (this.#stepMs = Math.max(this.decodeStepMs, sum / this.#n));
  }

  get prefillQueueMs(): Ms {
    if (this.spec.prefilledElsewhere !== true) return 0;
    // Every replica is fed by the one pool; the least backlogged is where the request can go.
    const least = Math.min(...this.#replicas.map((r) => r.prefillBacklogSteps ?? 0));
    const stepMs = this.#flow.prefillMs(this.spec.maxBatchedTokens);
    return least > 0 && least < Infinity ? least * stepMs : 0;
  }

  queueBudgetMs(cls: SloClassName): Ms | null {
    return this.#learners.budgets?.of(cls).budgetMs ?? null;
  }

  queueTargetMs(cls: SloClassName, waitMs: Ms): Ms | null {
    const { budgets, queueDelay } = this.#learners;
    const budget = budgets?.orObjective(cls) ?? null;
    if (queueDelay === undefined || budget === null) return null;
    const headWaitMs = this.#nowMs - this.#oldestOffered(this.#classes[cls].priority);
    return queueDelay.targetMs(cls, budget, Math.max(headWaitMs, waitMs), this.#nowMs);
  }

  lowerWaiting(cls: SloClassName): boolean {
    return this.#queue.lowerWaiting(this.#classes[cls].priority);
  }

  queueAhead(cls: SloClassName, ask: WaitAsk): QueueAhead {
    const { promptTokens, kvTokens, outputTokens = 1, seqs = 1, tenant, adapter } = ask;
    const queue = this.#queue;
    const placement = this.#placement;
    const flow = this.#flow;
    const ledger = this.#ledger;
    const replicas = this.#replicas;
    const nowMs = this.#nowMs;
    const c = this.#classes[cls];
    const itl = c.objectives.itlP99Ms;
    const isLong = itl !== undefined && placement.isLongPrompt(promptTokens, itl, seqs);
    const ahead = queue.ahead(c.priority, isLong, tenant);
    if (replicas.length === 0) return { requests: ahead, waitMs: Infinity };
    // The retries whose turns were kept before it go first (../queueing/kept-turns.ts), in the
    // band's order: each counts as one more request ahead. A long prompt waits apart from them.
    const turns = isLong ? 0 : (this.#learners.turns?.ahead(c.priority, nowMs, tenant, queue) ?? 0);
    // A request like this one, as routing would weigh it (no prefix hit assumed).
    const probe = (): RouteRequest => ({
      req: {
        id: '',
        arrivalMs: nowMs,
        inputTokens: promptTokens,
        outputTokens,
        tenant: tenant ?? '',
        sloClass: cls,
        adapter,
        ...(seqs > 1 ? { choices: seqs } : {}),
      },
      demand: {
        kvTokens,
        prefixHitTokens: 0,
        output: { p10: outputTokens, p50: outputTokens, p90: outputTokens, source: 'prior' },
      },
      cls: c,
    });
    // Room now and nothing queued: it starts, whatever turns are kept. Turns hold back what
    // would queue, never a replica's room that would otherwise idle until a retry came (the
    // turns' times are predictions, and their clients may not come).
    if (ahead === 0 && placement.wouldFit(probe(), replicas, nowMs)) {
      return { requests: 0, waitMs: 0 };
    }
    // How many requests like this one the replicas hold under flow control, each within its own
    // KV cache (asked at most once), each of its choices a stream of its own.
    let heldAlike: number | undefined;
    const steady = () =>
      (heldAlike ??= holdAlike(
        flow,
        replicas,
        itl ?? Infinity,
        promptTokens + outputTokens / 2,
        ask,
      ));
    // Before any rate is measured (a cold start, a burst in one instant): one dispatch per
    // replica per step at best, and no faster than requests end once the replicas hold all that
    // flow control lets them (Little). A rate measured before an idle stretch is only a ceiling.
    const perMs =
      queue.rate.perMs(nowMs) ??
      Math.min(
        this.#standInRate(promptTokens, outputTokens, steady(), seqs),
        queue.rate.lastPerMs ?? Infinity,
      );
    const queued = nowMs - this.#oldestOffered(c.priority, tenant);
    let modelledWaitMs: number;
    // The running requests that must end first: a floor no calibration shortens. Its ratios
    // were learned from requests that found room; after a flood's first fill, that was all of
    // them, at ~0 ms against the stand-in rate's wait, and the factor sat at its floor.
    let drainFloorMs = 0;
    let turn: LongTurn | undefined;
    if (isLong) {
      // Its turn on a replica whose streams can spare its stall, behind the long prompts ahead.
      const lengths = this.#learners.outputs?.distribution(cls, tenant ?? '', ask.reasoningEffort);
      const aheadMeanTokens = queue.longMeanTokens(c.priority);
      const { holds } = placement;
      const decodeStepMs = this.decodeStepMs;
      turn = longTurn(
        { promptTokens, seqs, cls: c, lengths, ahead, aheadMeanTokens },
        { ledger, flow, replicas, holds, spec: this.spec, decodeStepMs },
      );
      modelledWaitMs = turn.waitMs;
    } else {
      // A tenant with work queued in a fair band goes at the pace the fair order gives it:
      // tenants arriving later with less service pass it.
      const pace = tenant === undefined ? undefined : queue.tenantPaceMs(c.priority, tenant);
      // And after the retries whose turns were kept before it, each one more dispatch.
      modelledWaitMs =
        Math.max((ahead + 1) / perMs, queued, pace ?? 0) + (turns > 0 ? turns / perMs : 0);
    }
    // Requests beyond what the replicas can hold at once go no sooner than enough running ones
    // end — after a burst filled them, together, not at the rate the fill went: all of those
    // ahead when no replica could hold this one even once its prefills are done, else those
    // beyond what the replicas hold of the running mix (#beyondHeld). A long prompt's turn
    // weighs only the stall it makes: the room it needs is this.
    const beyond = this.#beyondHeld(ahead, ask, itl, steady, isLong ? 0 : promptTokens);
    const mustEnd = placement.couldHold(probe(), replicas) ? beyond : Math.max(beyond, ahead + 1);
    if (mustEnd > 0) {
      const drainMs = ledger.stepsUntilEnded(Math.ceil(mustEnd), nowMs) * this.decodeStepMs;
      if (drainMs > modelledWaitMs) modelledWaitMs = drainMs;
      drainFloorMs = drainMs;
    }
    // Its adapter has no slot anywhere: no sooner than the first replica frees one.
    const slotMs =
      adapter === undefined
        ? 0
        : ledger.stepsUntilSlotFor(adapter, replicas, this.spec.maxLoras ?? 1) * this.decodeStepMs;
    if (slotMs > modelledWaitMs) modelledWaitMs = slotMs;
    const calibration = this.#learners.calibration;
    return {
      requests: ahead,
      long: isLong,
      waitMs: Math.max(
        drainFloorMs,
        modelledWaitMs * (calibration?.factor(cls, promptTokens) ?? 1),
      ),
      modelledWaitMs,
      sharedPrefillMs: turn?.sharedPrefillMs,
      sureWaitMs: Math.max(
        drainFloorMs,
        (isLong ? LONG_TURN_SPREAD : 1) *
          modelledWaitMs *
          (calibration?.sureFactor(cls, promptTokens) ?? 1),
      ),
    };
  }

  leastWaitMs(cls: SloClassName, tenant: string, promptTokensAtMost: Tokens): Ms {
    const itl = this.#classes[cls].objectives.itlP99Ms;
    if (this.#replicas.length === 0) return 0;
    if (itl !== undefined && this.#placement.isLongPrompt(promptTokensAtMost, itl)) return 0;
    // Each term of the ordinary wait grows with the request's size — the dispatch rate's
    // stand-in, the running requests that must end first, whether it fits now — or does not
    // depend on it (the queue ahead, the head's wait, the tenant's pace); so the smallest
    // request's modelled wait is the least, at the least calibration of any prompt that size.
    const ask = { promptTokens: 1, kvTokens: 1, outputTokens: 1, tenant };
    const { modelledWaitMs = 0 } = this.queueAhead(cls, ask);
    return modelledWaitMs * (this.#learners.calibration?.leastFactor(cls, promptTokensAtMost) ?? 1);
  }

  #oldestOffered(priority: number, tenant?: string): Ms {
    const oldest = this.#oldest;
    if (oldest?.priority === priority && oldest.tenant === tenant) return oldest.ms;
    const ms = this.#queue.oldestOfferedMs(priority, tenant);
    this.#oldest = { priority, tenant, ms };
    return ms;
  }

  /**
   * Dispatches per ms before any rate is measured, for requests like this one (of `seqs`), of
   * which the replicas hold `held` at once.
   */
  #standInRate(promptTokens: Tokens, outputTokens: Tokens, held: number, seqs: number): number {
    const n = this.#n;
    const prefill = this.#flow.prefillMs(Math.max(1, promptTokens));
    const context = promptTokens + outputTokens / 2;
    const full = held / n;
    const fullStepMs = this.#flow.decodeStepMs(full * seqs, full * seqs * context);
    return Math.min(
      n / (prefill + this.decodeStepMs),
      held / (prefill + outputTokens * fullStepMs),
    );
  }

  /**
   * How many running requests must end before a new one (`ask`) behind `ahead` others fits, in
   * the sizes of the requests running: the gap budget limits the streams of the running mix's
   * mean context a step carries (`heldAtPace`) — each choice a stream, those ahead one each, the
   * streams beyond it ended as the running mix's requests hold them — and KV the sum of
   * reservations (those ahead at the mix's mean). Sizing the batch like the new request would
   * make a large prompt wait for a batch of large prompts. KV is counted per replica too
   * (`kvSlotsShort`): summed, the free KV of two replicas may hold a request neither can. With
   * nothing running: the steady batch of requests like it. The streams are counted beside a
   * prompt's `chunk`: a long prompt's own goes in a slow step of its own, so it is 0 for one.
   */
  #beyondHeld(
    ahead: number,
    ask: WaitAsk,
    itl: number | undefined,
    steady: () => number,
    chunk: Tokens,
  ): number {
    const { promptTokens, kvTokens, outputTokens = 1, seqs = 1 } = ask;
    const ledger = this.#ledger;
    const held = ledger.inFlight;
    if (held === 0) return ahead + 1 - steady();
    let reserved = 0;
    let streams = 0;
    let kvLimit = 0;
    for (const r of this.#replicas) {
      const a = ledger.replicas[r.index];
      reserved += a.reservedKvTokens;
      streams += a.seqs;
      kvLimit += this.#flow.kvLimitOf(r);
    }
    const mixKv = Math.max(1, reserved / held);
    const mixContext =
      ledger.decoding > 0
        ? ledger.decodeContextTokens / ledger.decoding
        : promptTokens + outputTokens / 2;
    const atPace = heldAtPace(
      this.#flow,
      ledger,
      this.#replicas,
      itl ?? Infinity,
      mixContext,
      chunk,
    );
    const bySeqs = (streams + ahead + seqs - atPace) / Math.max(1, streams / held);
    const byKv = (reserved + ahead * mixKv + kvTokens - kvLimit) / mixKv;
    const short = kvSlotsShort(this.#flow, ledger, this.#replicas, ahead, kvTokens, mixKv);
    return Math.max(bySeqs, byKv, short);
  }
}
