/**
 * One simulated run: a workload arrives on a virtual clock, the policy pipeline decides each
 * request, a fleet of engine replicas serves them, clients time out and retry, and every
 * outcome folds into the report. Deterministic: same seed and inputs, same report (apart from
 * its `sim` block of wall-clock figures).
 */
import { missedForCapacity } from '../core/autoscale/scale-window.ts';
import type { LlmRequest } from '../core/request/request.ts';
import type { Ms } from '../core/request/units.ts';
import type { FinalState } from '../core/observe/request-outcome.ts';
import { Pipeline } from '../core/pipeline.ts';
import { PUMP_EVERY_MS, followsTokens } from '../core/pipeline-host.ts';
import { TenantDoor } from './tenant-door.ts';
import type { FleetSpec } from '../core/fleet/fleet-spec.ts';
import type { Ticket } from '../core/queueing/ticket.ts';
import type { Rejection } from '../core/request/decision.ts';
import { kvBytesPerToken } from '../engine/hardware.ts';
import { OutcomeAccumulator } from '../core/observe/outcome-accumulator.ts';
import { RunLengthSamples } from '../core/observe/run-length-samples.ts';
import { TokenClock } from './token-clock.ts';
import type { Report } from '../core/observe/report.ts';
import { runReport } from './run-report.ts';
import { VirtualClock } from '../runtime/virtual-clock.ts';
import { Fleet, prefillHandover } from './fleet.ts';
import { CapacityEvents } from './capacity-events.ts';
import type { SimulationOptions } from './simulation-options.ts';
import { SpreadSampler } from './spread-sampler.ts';
import { FleetScaling } from './fleet-scaling.ts';
import { isGood } from '../core/observe/slo-judge.ts';
import { RequestTracker } from './request-tracker.ts';
import { trackerListener } from './tracker-listener.ts';
import { retryDelayMs } from './client-behaviour.ts';

export type { SimulationOptions };

export function simulate(opts: SimulationOptions): Report {
  const wallStart = opts.wallClock.now();
  const clock = new VirtualClock();
  const accumulator = new OutcomeAccumulator(opts.policy.classes);
  const itl = new RunLengthSamples();
  const tokenTimes = new TokenClock();
  const excludedGaps: number[] = [];
  const clientRng = opts.rng.fork('client');
  const counters = { timeouts: 0, retries: 0, finished: 0, offered: 0 };
  let arrivalsDone = false;
  // When the last request ended: the run's length, whatever is due after it (a group starting).
  let endMs: Ms | undefined;
  // Set once the fleet exists (the loop measures it).
  let scaling: FleetScaling | null = null;
  const windows = () => scaling?.windows ?? [];

  const finish = (tracker: RequestTracker, state: FinalState) => {
    if (state !== 'completed' && tracker.gaps !== null)
      for (const g of tracker.gaps) excludedGaps.push(g);
    const outcome = tracker.outcome(state);
    accumulator.add(outcome);
    endMs = clock.now();
    if (++counters.finished >= counters.offered && arrivalsDone) events.stop();
    if (opts.onOutcomeRecord !== undefined) {
      const record = tracker.record(outcome, opts.policy.classes[outcome.sloClass], clock.now());
      if (record !== undefined) opts.onOutcomeRecord(record);
    }
    // Judged only for whoever asks (the autoscaler's window, a report page's timeline).
    if (opts.onOutcome === undefined && scaling === null) return;
    const good =
      state === 'completed' && isGood(outcome, opts.policy.classes[outcome.sloClass].objectives);
    opts.onOutcome?.(outcome, clock.now(), good);
    if (state === 'completed') for (const w of windows()) w.completed(tracker.outputStreamed, good);
  };

  /** The attempt on its replica ended, `completed` or not, with what it streamed. */
  const endAttempt = (t: RequestTracker, completed: boolean) => {
    t.timeout?.cancel();
    t.timeout = null;
    t.cut?.cancel();
    t.cut = null;
    fleet.release(t.replica);
    const outputTokens = t.outputStreamed;
    if (t.ticket !== null)
      pipeline.end(t.ticket, outputTokens, completed, clock.now(), t.choiceTokens());
    t.ticket = null;
    door.settle(t, t.req.inputTokens + outputTokens);
  };

  const listener = trackerListener({
    itl,
    // Read on every token: a plain constant, decided before any engine event can fire.
    followTokens: followsTokens(opts.policy),
    firstToken: (ticket, ttftMs) => pipeline.firstToken(ticket, ttftMs),
    token: (ticket, atMs) => pipeline.token(ticket, atMs),
    gapDelivered: (ticket, gapMs, atMs) => pipeline.gapDelivered(ticket, gapMs, atMs),
    endAttempt,
    finish,
    pump: () => pump(),
    sampleSpread: () => sampleSpread(),
  });

  // A precise prefix index is fed by the engines' own KV events.
  const kvEvents =
    opts.policy.routing.prefixMode === 'precise'
      ? (replica: number, kind: 'stored' | 'removed', hash: string) =>
          pipeline.kvEvent(replica, kind, hash)
      : undefined;
  const autoscale = opts.autoscale;
  const fleet = new Fleet(
    opts.replicas,
    opts.engine,
    opts.profile,
    listener,
    clock,
    kvEvents,
    autoscale === undefined
      ? undefined
      : {
          readyTime: autoscale.readyTime,
          rng: opts.rng.fork('autoscale'),
          onReady: () => pump(),
          onRemoved: (index) => pipeline.replicaGone(index),
        },
    opts.prefill === undefined
      ? undefined
      : {
          ...opts.prefill,
          ...(autoscale === undefined
            ? {}
            : {
                lifecycle: {
                  readyTime: autoscale.readyTime,
                  rng: opts.rng.fork('autoscale-prefill'),
                  onReady: () => pump(),
                  onRemoved: () => {},
                },
              }),
        },
    opts.servableOf,
  );
  const spec: FleetSpec = {
    model: opts.engine.model.name,
    adapters: opts.engine.loraModules ?? [],
    maxLoras: opts.engine.maxLoras,
    adapterLoadMs: opts.engine.loraLoadMs,
    maxModelLen: opts.engine.maxModelLen,
    maxBatchedTokens: opts.engine.maxBatchedTokens,
    longPrefillTokenThreshold: opts.engine.longPrefillTokenThreshold,
    // A prompt staged in pieces needs each piece cached for the next, and a step that takes a
    // piece beside the streams: prefix caching and chunked prefill.
    stagesPrefill:
      opts.prefill === undefined && opts.engine.enablePrefixCaching && opts.engine.chunkedPrefill,
    maxNumSeqs: opts.engine.maxNumSeqs,
    kvBytesPerToken: kvBytesPerToken(opts.engine.model),
    replicaKvTokens: fleet.replicaKvTokens,
    stepTime: opts.plannedProfile ?? opts.profile,
    ...(opts.prefill === undefined ? {} : prefillHandover(opts.engine, opts.prefill.link)),
  };
  const pipeline = new Pipeline<RequestTracker>(opts.policy, spec, {
    dispatch(ticket: Ticket<RequestTracker>) {
      const t = ticket.handle;
      t.expiry?.cancel();
      t.expiry = null;
      t.dispatched(ticket);
      fleet.dispatch(t);
      const deadline = t.req.deadlineMs;
      if (deadline !== undefined) t.cut = clock.at(deadline, () => cutAtDeadline(t));
    },
    expire(ticket: Ticket<RequestTracker>) {
      const t = ticket.handle;
      t.expiry?.cancel();
      t.expiry = null;
      t.timeout?.cancel();
      t.timeout = null;
      t.ticket = null;
      // An admitted request that can no longer make its deadline failed; a deferred one that
      // never found capacity was never admitted. Both stay in the offered denominator.
      t.admitted = !ticket.wasDeferred;
      t.failReason = ticket.wasDeferred ? 'deferred_expired' : 'deadline_expired';
      door.settle(t, 0);
      finish(t, 'failed');
    },
    record: (r) => {
      if (missedForCapacity(r)) for (const w of windows()) w.refused();
      opts.onDecision?.(r);
    },
  });
  const door = new TenantDoor(opts.policy.tenants, pipeline, clock);
  opts.withLearned?.(pipeline.learned);
  // While anything waits, pump on a tick too, as the gateway does (PUMP_EVERY_MS).
  let pumpTick = false;
  const keepPumping = () => {
    if (pumpTick || !pipeline.waiting) return;
    pumpTick = true;
    clock.at(clock.now() + PUMP_EVERY_MS, () => {
      pumpTick = false;
      pump();
    });
  };
  const pump = () => {
    if (pipeline.waiting) pipeline.pump(clock.now(), fleet.snapshots());
    keepPumping();
  };

  const spread = new SpreadSampler(fleet, pipeline.dispatcher.flow, opts.engine, clock);
  const sampleSpread = () => spread.sample();

  /** Its replica failed, and its streams cannot go on elsewhere. */
  const replicaLost = (t: RequestTracker) => {
    t.failReason = 'replica_lost';
    finish(t, 'failed');
  };

  /** `refused`: the refusal the attempt got, if it was refused. */
  const retryOrEnd = (tracker: RequestTracker, state: FinalState, refused?: Rejection) => {
    if (tracker.attempts >= opts.client.maxAttempts) return finish(tracker, state);
    // Told no retry can succeed: a disciplined client believes it.
    if (refused?.final === true && opts.client.retryMode === 'disciplined') {
      return finish(tracker, state);
    }
    counters.retries++;
    const delay = retryDelayMs(opts.client, tracker.attempts, clientRng, refused?.retryAfterMs);
    clock.at(clock.now() + delay, () => sendAttempt(tracker));
  };

  /**
   * A dispatched attempt still running at its client's deadline ends there, failed, as the
   * gateway cuts it (504, or an error event mid-stream): what it streamed is the client's no
   * more, and no retry can make the deadline.
   */
  const cutAtDeadline = (t: RequestTracker) => {
    t.cut = null;
    t.timeout?.cancel();
    t.timeout = null;
    const ticket = t.ticket;
    t.ticket = null;
    fleet.cancel(t);
    const now = clock.now();
    if (ticket !== null) {
      pipeline.cut(ticket, 'deadline_exceeded', 504, now);
      pipeline.end(ticket, t.outputStreamed, false, now, t.choiceTokens());
    }
    door.settle(t, t.req.inputTokens + t.outputStreamed);
    t.failReason = 'deadline_expired';
    finish(t, 'failed');
    pump();
  };

  const onTimeout = (tracker: RequestTracker) => {
    tracker.timeout = null;
    tracker.cut?.cancel();
    tracker.cut = null;
    counters.timeouts++;
    const ticket = tracker.ticket;
    tracker.ticket = null;
    tracker.expiry?.cancel();
    tracker.expiry = null;
    if (ticket !== null && ticket.state !== 'dispatched') {
      pipeline.withdraw(ticket, clock.now());
      door.settle(tracker, 0);
    } else {
      fleet.cancel(tracker);
      const tokens = tracker.outputStreamed;
      if (ticket !== null) pipeline.end(ticket, tokens, false, clock.now(), tracker.choiceTokens());
      pump();
    }
    if (tracker.firstTokenMs !== undefined) {
      // A stream that already produced tokens is never retried: the client would see them
      // twice. A naive client drops the partial answer and asks again.
      if (opts.client.retryMode !== 'naive' || tracker.attempts >= opts.client.maxAttempts) {
        return finish(tracker, 'cancelled');
      }
      for (const g of tracker.discardPartial()) excludedGaps.push(g);
    }
    retryOrEnd(tracker, 'cancelled');
  };

  /**
   * The refusal the gateway gives before it reads a request's body (http/completions.ts): its
   * deadline out of reach, or the queue alone ruling it out — here with its prompt's exact size.
   */
  const refusedUnread = (asked: LlmRequest, now: Ms) => {
    if (asked.idempotencyKey !== undefined) return undefined;
    const refusal =
      pipeline.refusedUnread(asked.deadlineMs, now) ??
      pipeline.refusedForQueue(asked.sloClass, asked.tenant, asked.inputTokens, now, () =>
        fleet.snapshots(),
      );
    return refusal === undefined
      ? undefined
      : ({ outcome: 'reject', decision: pipeline.refuse(asked, refusal, now) } as const);
  };

  /** Offers `tracker`'s next attempt; false when admission refused it. */
  const sendAttempt = (tracker: RequestTracker): boolean => {
    sampleSpread();
    tracker.nextAttempt();
    const now = clock.now();
    const { retryMode, maxAttempts } = opts.client;
    const asked = tracker.offered(retryMode === 'disciplined', now, maxAttempts > 1);
    const unread = refusedUnread(asked, now);
    const offer =
      unread ??
      door.admit(tracker, asked, now) ??
      pipeline.offer(asked, tracker, now, fleet.snapshots());
    if (offer.outcome === 'reject') {
      door.settle(tracker, 0);
      // The rest of a stream whose replica failed found no room: the stream ends failed.
      if (tracker.resumedAfter > 0) replicaLost(tracker);
      else {
        tracker.admitted = false;
        tracker.rejectReason = offer.decision.reason;
        retryOrEnd(tracker, 'rejected', offer.decision);
      }
      return false;
    }
    const ticket = offer.ticket;
    if (ticket.state === 'ended') return true;
    if (ticket.state !== 'dispatched') {
      keepPumping();
      tracker.ticket = ticket;
      if (ticket.wasDeferred) tracker.deferred = true;
      if (Number.isFinite(ticket.expiresMs)) {
        tracker.expiry = clock.at(ticket.expiresMs, () => pipeline.expire(ticket, clock.now()));
      }
    }
    if (opts.client.timeoutMs !== undefined && tracker.timeout === null) {
      tracker.timeout = clock.at(now + opts.client.timeoutMs, () => onTimeout(tracker));
    }
    return true;
  };

  // A request's gaps are kept where its stream may end short (a timeout, a group's failure,
  // its own deadline): a stream cut short is no completed request's, and its gaps leave the pool.
  const mayCut = opts.client.timeoutMs !== undefined || (opts.failGroupsAtMs?.length ?? 0) > 0;
  const arrivals = opts.requests[Symbol.iterator]();
  const scheduleNextArrival = () => {
    const next = arrivals.next();
    if (next.done) {
      arrivalsDone = true;
      return;
    }
    const req = next.value;
    counters.offered++;
    clock.at(req.arrivalMs, () => {
      for (const w of windows()) w.arrived(req.inputTokens);
      const { priority, objectives } = opts.policy.classes[req.sloClass];
      const keepGaps = mayCut || req.deadlineMs !== undefined;
      sendAttempt(new RequestTracker(req, tokenTimes, keepGaps, priority, objectives));
      scheduleNextArrival();
      // The last one ended in its own arrival (refused, failed at once): nothing more is due.
      if (arrivalsDone && counters.finished >= counters.offered) events.stop();
    });
  };
  scheduleNextArrival();
  const events = new CapacityEvents(opts, fleet, clock, {
    endAttempt: (t) => endAttempt(t, false),
    resend: (t) => sendAttempt(t),
    lost: replicaLost,
    pump: () => pump(),
  });
  if (autoscale !== undefined) {
    scaling = new FleetScaling(
      autoscale,
      fleet,
      {
        queued: () => pipeline.queued,
        cachedBlocks: (index) => pipeline.dispatcher.router.prefix?.blocksOf(index) ?? 0,
        done: () => arrivalsDone && counters.finished >= counters.offered,
        flow: pipeline.dispatcher.flow,
        pace: () => pipeline.dispatcher.ledger.meanPace(),
        classes: opts.policy.classes,
        maxBatchedTokens: opts.engine.maxBatchedTokens,
      },
      clock,
      opts.prefill,
    );
    scaling.start();
  }

  let sinceProgress = 0;
  const progress = (now: Ms) => {
    if (++sinceProgress % 4096 === 0) opts.onProgress?.(now, counters.finished);
  };
  clock.run(Infinity, opts.onProgress === undefined ? undefined : progress);

  return runReport({
    opts,
    durationMs: endMs ?? clock.now(),
    accumulator,
    itl: itl.summarize(excludedGaps),
    fleet,
    events,
    scaling,
    spread,
    pipeline,
    client: { timeouts: counters.timeouts, retries: counters.retries },
    sim: { wallMs: opts.wallClock.now() - wallStart, events: clock.events },
  });
}
