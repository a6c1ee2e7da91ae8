/**
 * The gateway's engine room: hosts the policy pipeline on the wall clock. `admit` decides a request
 * before any byte is sent — rejected, or dispatched to a backend once flow control lets it go, or
 * expired, withdrawn or cut while it waited; `run` streams it from that backend, reporting every
 * token to the pipeline (ledger, budgets, estimators) and the metrics (metered-stream.ts). `refuse`
 * and `refuseUnread` account for requests turned away before the pipeline (at the shared-state
 * door, or unreadable), so every request is counted and has a decision record. Readiness and
 * breakers are the fleet's (backend-fleet.ts); the HTTP layer only translates.
 */
import { capacityModel, missedForCapacity } from '../core/autoscale/scale-window.ts';
import { withEnvelope } from '../core/autoscale/capacity-envelope.ts';
import { ScaleExport, startPool } from './scale-export.ts';
import type { ScaleExportSettings, ScaleGroups } from './scale-export.ts';
import { SloExport, refused, stopped, type Ending } from './slo-export.ts';
import { CAPACITY_REASONS, type RejectReason, type Rejection } from '../core/request/decision.ts';
import type { ResolvedPolicy } from '../core/config/policy.ts';
import type { FleetSpec } from '../core/fleet/fleet-spec.ts';
import { unreadRecord, type DecisionRecord } from '../core/observe/decision-record.ts';
import { Pipeline } from '../core/pipeline.ts';
import { PUMP_EVERY_MS, type OfferContext } from '../core/pipeline-host.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import type { Ticket } from '../core/queueing/ticket.ts';
import type { LlmRequest } from '../core/request/request.ts';
import type { Ms } from '../core/request/units.ts';
import type { RequestOutcome } from '../core/observe/request-outcome.ts';
import type { OutcomeRecord } from '../core/observe/outcome-record.ts';
import type { SloClassName } from '../core/request/slo-classes.ts';
import type { ReplicaSnapshot } from '../core/fleet/replica-snapshot.ts';
import { isUpstreamError, type ApiKind, type Backend, type StreamEnd } from './backend.ts';
import { boundedEnd, type TokenSink } from './backend.ts';
import { BackendFleet } from './backend-fleet.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import { RequestCounts, type PromptLearners } from './request-counts.ts';
import { meteredStream } from './metered-stream.ts';
import { resultOf, Waiter, whyNot } from './waiter.ts';
import { observePace, observeQueue, observeShares } from './queue-gauges.ts';
import { attemptFailure, servedBody, triedAgain, upstreamCall } from './upstream-attempt.ts';
import type { OpsLog } from './ops-log.ts';
import { stoppedBy, type StopCause } from './stop.ts';
import { UNTRACED, type RequestTrace } from './tracing/request-trace.ts';
import { SpanMemo } from './span-memo.ts';

export interface GatewayDeps {
  readonly policy: ResolvedPolicy;
  readonly spec: FleetSpec;
  readonly backends: readonly Backend[];
  readonly clock: Clock;
  readonly timers: Timers;
  readonly metrics: GatewayMetrics;
  readonly log: OpsLog;
  readonly onDecision?: (record: DecisionRecord) => void;
  /** Each completed request, when it ends, and whether it was good (the dashboard's feed). */
  readonly onCompleted?: (outcome: RequestOutcome, atMs: Ms, good: boolean) => void;
  /** How each dispatched attempt ended, against what was predicted (the decision log's). */
  readonly onOutcome?: (record: OutcomeRecord) => void;
  /** Each autoscaling tick's groups. */
  readonly onScaleTick?: (groups: ScaleGroups) => void;
  /** The autoscaler whose decision the gateway exports (no actuator: `goodput_desired_replicas`). */
  readonly autoscale?: ScaleExportSettings;
  /** Engines under vLLM's priority scheduling: the priority a class's requests go with. */
  readonly priorityOf?: (cls: SloClassName) => number;
  /** What learns from the backends' counts of prompts (none where off). */
  readonly learners?: PromptLearners;
}

export type Admitted =
  | { readonly kind: 'rejected'; readonly decision: Rejection }
  /** It waited past a deadline: `deadline_exceeded` (the client's), `deadline` (its class's)… */
  | { readonly kind: 'expired'; readonly reason: RejectReason }
  | { readonly kind: 'stopped'; readonly why: StopCause }
  | { readonly kind: 'dispatched'; readonly ticket: Ticket<Waiter> };

/** What `admit` knows of a request beyond itself. */
type AdmitAt = OfferContext & { readonly trace?: RequestTrace; readonly onQueued?: () => void };

/** The status a request the gateway stops gets (a stream already answered 200 says it in-stream). */
const CUT_STATUS = { deadline_exceeded: 504, shutting_down: 503, handed_over: 503 } as const;
/** How long the queue's verdict on unread requests stands (`refusedForQueue`). */
const QUEUE_VERDICT_MS: Ms = 1;

export class Gateway {
  readonly pipeline: Pipeline<Waiter>;
  private readonly deps: GatewayDeps;
  private readonly fleet: BackendFleet;
  private readonly counts: RequestCounts;
  private pumpTimer: TimerHandle | null = null;
  /** The autoscaler whose decision `/metrics` exports; null when off. */
  readonly scaling: ScaleExport | null;
  /** Every finished request, for the policy's SLOs (`goodput_slo_…`). */
  readonly slos: SloExport;
  /** The queue's verdicts on unread requests, each reused for a millisecond (`refusedForQueue`). */
  private readonly queueVerdicts = new SpanMemo<Rejection | undefined>(QUEUE_VERDICT_MS);

  constructor(deps: GatewayDeps) {
    this.deps = deps;
    const m = deps.metrics;
    this.fleet = new BackendFleet({
      ...deps,
      breaker: deps.policy.resilience.breaker,
      onDown: (i) => this.pipeline.replicaGone(i),
    });
    this.counts = new RequestCounts(m, deps.spec.model, deps.learners);
    this.slos = new SloExport(deps.policy.slos, deps.clock, m.slo, deps.spec.model);
    this.pipeline = new Pipeline<Waiter>(deps.policy, deps.spec, {
      dispatch: (t) => {
        this.fleet.dispatched(t.replica);
        t.handle.resolve({ how: 'dispatched' });
      },
      expire: (t, reason) => {
        this.slos.ended(t.asked, { finish: 'expired', reason, dispatched: false });
        t.handle.resolve({ how: 'expired', reason });
      },
      record: (r, asked) => {
        this.counts.decided(r, asked);
        if (missedForCapacity(r)) this.scaling?.advisor.window.refused();
        deps.onDecision?.(r);
      },
    });
    m.state.policy.set({ policy: deps.policy.name, policy_revision: deps.policy.revision }, 1);
    m.serviceSource = () => this.pipeline.vtc.entries();
    m.passesSource = () => this.pipeline.dispatcher.passes;
    m.turns.source = () => this.pipeline.learned.turns?.asOf(deps.clock.now());
    m.costRevision = deps.policy.queueing.cost.revision;
    const flow = this.pipeline.dispatcher.flow;
    m.gapShareSource = () => flow.delivery(deps.clock.now());
    this.scaling =
      deps.autoscale === undefined
        ? null
        : new ScaleExport(deps.autoscale, {
            ...deps,
            snapshots: () => this.snapshots(),
            queued: () => this.pipeline.queued,
            fresh: () => this.fleet.ready,
            onTick: deps.onScaleTick,
            capacity: withEnvelope(
              capacityModel(flow, deps.policy.classes, false, () =>
                this.pipeline.dispatcher.ledger.meanPace(),
              ),
              deps.autoscale.envelope,
            ),
          });
    const pool = deps.autoscale?.pool;
    if (pool !== undefined) startPool(pool, this.fleet, deps.autoscale?.limits.minReplicas ?? 1);
  }

  /** Refreshes the gauges a scrape reads (queue, shares, backends). */
  observe(): void {
    observeQueue(this.pipeline, this.deps.metrics, this.deps.clock.now());
    observeShares(this.pipeline, this.deps.metrics);
    observePace(this.pipeline, this.deps.metrics, this.deps.backends);
    this.fleet.observe();
  }

  /** Usable backends as the pipeline sees them (backend-fleet.ts). */
  snapshots(): ReplicaSnapshot[] {
    return this.fleet.snapshots();
  }

  get ready(): boolean {
    return this.fleet.ready;
  }

  /**
   * A request refused before the pipeline — by the shared-state door, the gateway's own state
   * (shutting down, shedding) or its deadline, `unread` when its body was never read: counted as
   * offered, with its decision record, like the pipeline's refusals, and as demand the
   * autoscaler sees, as the simulator counts every arrival. Returns the refusal as the client
   * is to be told it (`Pipeline.refuse`).
   */
  refuse(req: LlmRequest, rejection: Rejection, at: { shared: boolean; unread: boolean }) {
    const { shared, unread } = at;
    this.demand(req, unread ? null : req.inputTokens);
    this.counts.refused(req, rejection.reason, shared);
    this.slos.ended(req, { finish: 'refused', reason: rejection.reason, dispatched: false });
    return this.pipeline.refuse(req, rejection, this.deps.clock.now());
  }

  /**
   * The refusal admission would make, from the queue alone, of any request of `cls` from
   * `tenant` whose prompt is at most `promptTokensAtMost` tokens (`Pipeline.refusedForQueue`):
   * given before the body is read, and refused with `refuse` as unread. Under a flood hundreds
   * of requests a millisecond ask it, each for the same microseconds of queue arithmetic over the
   * same queue, so the verdict for a class, tenant and prompt bound is taken once a millisecond
   * (`QUEUE_VERDICT_MS`), a thousandth of the waits it compares.
   */
  refusedForQueue(
    cls: SloClassName,
    tenant: string,
    promptTokensAtMost: number,
  ): Rejection | undefined {
    const now = this.deps.clock.now();
    return this.queueVerdicts.get(`${cls}\n${tenant}\n${promptTokensAtMost}`, now, () =>
      this.pipeline.refusedForQueue(cls, tenant, promptTokensAtMost, now, () => this.snapshots()),
    );
  }

  /**
   * A first attempt is demand the autoscaler sees, where it arrived (not where it is handed
   * over); a prompt unread (null) has no size to add.
   */
  private demand(req: LlmRequest, inputTokens: number | null): void {
    if ((req.attempt ?? 1) === 1 && req.handedOver !== true)
      this.scaling?.advisor.window.arrived(inputTokens);
  }

  /** Refused unread (bad body, no key…; no server ready): recorded; invalid but for capacity. */
  refuseUnread(u: {
    readonly requestId: string;
    readonly tenant: string | null;
    readonly cls: SloClassName | null;
    readonly reason: RejectReason;
    readonly status: number;
  }): void {
    if (!CAPACITY_REASONS.has(u.reason)) this.counts.unread(u.reason);
    const atMs = this.deps.clock.now();
    this.deps.onDecision?.(unreadRecord({ ...u, revision: this.pipeline.revision, atMs }));
  }

  /**
   * `avoid`: the backend a failed earlier attempt of this request used; `turn`: where it stands
   * at its kept turn, here or on another replica; `trace` is told the decision and the end of
   * the wait; `onQueued`, at once, that it was queued.
   */
  async admit(req: LlmRequest, signal: AbortSignal, at: AdmitAt = {}): Promise<Admitted> {
    const { avoid = -1, turn, trace = UNTRACED, onQueued } = at;
    this.counts.offered(req);
    this.demand(req, req.inputTokens);
    const waiter = new Waiter();
    const replicas = this.snapshots();
    const offer = this.pipeline.offer(req, waiter, this.deps.clock.now(), replicas, {
      avoid,
      readyInMs: replicas.length === 0 ? this.fleet.readyInMs() : undefined,
      turn,
    });
    if (offer.outcome === 'reject') {
      trace.decided('reject', offer.decision.reason, this.deps.clock.now());
      this.counts.rejected(offer.decision.reason);
      // A retry refused leaves the request failed by its backend, as its client is told.
      this.slos.ended(req, refused(offer.decision.reason, avoid >= 0));
      return { kind: 'rejected', decision: offer.decision };
    }
    const ticket = offer.ticket;
    trace.decided(resultOf(offer), undefined, this.deps.clock.now());
    if (ticket.state === 'dispatched') {
      trace.dequeued(this.deps.clock.now());
      return { kind: 'dispatched', ticket };
    }
    onQueued?.();
    const expiry = Number.isFinite(ticket.expiresMs)
      ? this.deps.timers.at(ticket.expiresMs, () =>
          this.pipeline.expire(ticket, this.deps.clock.now()),
        )
      : null;
    const onAbort = () => {
      // Dispatched already: the stream sees the abort and ends the ticket itself.
      if (!ticket.queued) return;
      const why = stoppedBy(signal) ?? 'client_closed';
      this.pipeline.withdraw(ticket, why === 'client_closed' ? this.deps.clock.now() : undefined);
      // Handed over, it goes on at another replica, where it ends.
      if (why !== 'handed_over') this.slos.ended(req, stopped(why, false));
      if (why === 'client_closed') this.counts.cancelled(this.counts.labels(req), 'queued');
      else this.pipeline.cut(ticket, why, CUT_STATUS[why], this.deps.clock.now());
      waiter.resolve({ how: 'stopped', why });
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    this.keepPumping();
    const settled = await waiter.settled;
    signal.removeEventListener('abort', onAbort);
    expiry?.cancel();
    trace.dequeued(this.deps.clock.now(), whyNot(settled));
    switch (settled.how) {
      case 'dispatched':
        return { kind: 'dispatched', ticket };
      case 'expired':
        return { kind: 'expired', reason: settled.reason };
      case 'stopped':
        return { kind: 'stopped', why: settled.why };
    }
  }

  /**
   * Streams a dispatched request from its backend, handing each token to `onToken` once the
   * pipeline and the metrics have counted it. Resolves with the backend's end, or rejects: an
   * upstream failure (after the first token the client must be told in-stream), or the reason
   * `signal` was aborted with. `retry`: a failure before the first token will be tried again, so
   * it does not end the request.
   */
  async run(
    ticket: Ticket<Waiter>,
    kind: ApiKind,
    body: Record<string, unknown>,
    signal: AbortSignal,
    onToken: TokenSink,
    retry = false,
    trace: RequestTrace = UNTRACED,
  ): Promise<StreamEnd> {
    const { clock } = this.deps;
    const backend = this.deps.backends[ticket.replica];
    const attempt = trace.attempt(backend, ticket.req, clock.now());
    const replica = ticket.replica;
    const { meter, labels, gaps, sink, ended, outcomeOf } = meteredStream(
      { clock, pipeline: this.pipeline, counts: this.counts, slos: this.slos },
      ticket,
      attempt,
      onToken,
    );
    this.fleet.started(replica);
    let end: StreamEnd | undefined;
    // How it ended if not completed, and whether it is tried again: a backend's 4xx (`refused`)
    // or a failure tried again is not the request's end, but is this attempt's outcome record.
    let ending: Ending = { finish: 'failed', dispatched: true };
    let again = false;
    try {
      const priority = this.deps.priorityOf?.(ticket.req.sloClass);
      const call = upstreamCall(ticket, kind, servedBody(body, ticket.req, priority), signal);
      const told = await backend.stream({ ...call, trace: attempt.headers }, sink);
      end = boundedEnd(told, this.deps.spec.maxModelLen);
      attempt.ended(end, clock.now());
      this.counts.streamed(labels, end, ticket.req, body);
      this.fleet.succeeded(replica, end);
      return end;
    } catch (e) {
      const why = stoppedBy(signal);
      attempt.failed(...attemptFailure(e, why), clock.now());
      if (why !== undefined) {
        ending = stopped(why, true);
        this.fleet.stopped(replica, ticket, meter.firstTokenMs);
        if (why === 'client_closed') this.counts.cancelled(labels, 'streaming');
        else this.pipeline.cut(ticket, why, CUT_STATUS[why], clock.now());
      } else if (isUpstreamError(e)) {
        this.fleet.failed(replica, e);
        if (e.requestAtFault) ending = { finish: 'refused', dispatched: true };
        again = triedAgain(e, ticket.req, retry);
      } else {
        this.fleet.abandoned(replica);
      }
      throw e;
    } finally {
      this.fleet.ended(replica);
      ended();
      const completed = end !== undefined;
      if (completed) ending = { finish: 'completed', dispatched: true };
      if (ending.finish !== 'refused' && !again)
        this.slos.streamed(ticket.asked, ending, meter, gaps);
      const outputTokens = end?.completionTokens ?? meter.tokens;
      const now = clock.now();
      this.pipeline.end(ticket, outputTokens, completed, now, meter.choiceTokens());
      const { outcome, record } = outcomeOf(ending, outputTokens, now, again, end);
      if (completed) {
        const good = record.outcome.good;
        this.counts.completed(labels, meter, outputTokens, good);
        this.scaling?.advisor.window.completed(outputTokens, good);
        this.deps.onCompleted?.(outcome, now, good);
      }
      this.deps.onOutcome?.(record);
      this.pump();
    }
  }

  /** The autoscaler's freeze, or null without an autoscaler. */
  get scalingFrozen(): boolean | null {
    return this.scaling?.frozen ?? null;
  }

  /** An operator's freeze or thaw of the autoscaler (a no-op without one). */
  freezeScaling(frozen: boolean): void {
    if (this.scaling === null) return;
    this.scaling.frozen = frozen;
    this.deps.log.info({ frozen }, frozen ? 'autoscaler frozen' : 'autoscaler thawed');
  }

  pump(): void {
    if (this.pipeline.waiting) this.pipeline.pump(this.deps.clock.now(), this.snapshots());
  }

  async close(): Promise<void> {
    this.pumpTimer?.cancel();
    this.pumpTimer = null;
    this.scaling?.close();
    await this.fleet.close();
  }

  /** While anything waits, re-check on a short tick: backend load can free capacity too. */
  private keepPumping(): void {
    if (this.pumpTimer !== null) return;
    const tick = () => {
      this.pumpTimer = null;
      this.pump();
      observeQueue(this.pipeline, this.deps.metrics, this.deps.clock.now());
      if (this.pipeline.waiting) {
        this.pumpTimer = this.deps.timers.at(this.deps.clock.now() + PUMP_EVERY_MS, tick);
      }
    };
    this.pumpTimer = this.deps.timers.at(this.deps.clock.now() + PUMP_EVERY_MS, tick);
  }
}
