/**
 * The one place the stage order is written: estimate → admit → queue → dispatch under flow
 * control → route. Each stage is a plugin behind a small interface; the pipeline sequences them
 * and tells its host (the simulator, the gateway) what to do through a sink: dispatch this
 * request to that replica, this one expired, here is a decision record. The host reports back
 * what it sees — first token, each token, the end — which feeds the ledger, the estimators and
 * the budgets. Admission is final before the first byte streams.
 */
import type { Admission, AdmissionContext } from './admission/admission.ts';
import { DecisionContext } from './admission/decision-context.ts';
import { offerTicket, served, type TicketTerms } from './admission/offer-ticket.ts';
import type {
  AdmissionDecision,
  RejectReason,
  RejectStatus,
  Rejection,
} from './request/decision.ts';
import { ADMISSIONS } from './admission/registry.ts';
import type { ResolvedPolicy } from './config/policy.ts';
import { Dispatcher, type DispatchDecision } from './dispatch/dispatcher.ts';
import { outputCap, tenantCharge } from './estimate/estimator.ts';
import type { FleetSpec } from './fleet/fleet-spec.ts';
import { Learned } from './estimate/learned.ts';
import { refusalRecord, ticketRecord, type DecisionResult } from './observe/decision-record.ts';
import type { Ticket } from './queueing/ticket.ts';
import { admittedExpiry, expiredRefusal, expiryReason } from './queueing/ticket-expiry.ts';
import { deadlineOutOfReach, finalRefusal, refusedUpFront } from './admission/up-front.ts';
import { keepTurn, type TurnStanding } from './queueing/kept-turns.ts';
import type { LlmRequest } from './request/request.ts';
import type { SloClassName } from './request/slo-classes.ts';
import type { Ms, Tokens } from './request/units.ts';
import { choicesOf, servedGpuMs } from './request/demand.ts';
import { servingOnly, type ReplicaSnapshot } from './fleet/replica-snapshot.ts';
import { ROUTERS } from './routing/registry.ts';
import { lookupTenant, type TenantDirectory } from './config/tenant-schema.ts';
import { VirtualTokenCounters } from './queueing/virtual-token-counter.ts';
import { ServiceCharges } from './queueing/service-charges.ts';
import type { Offer, OfferContext, PipelineSink } from './pipeline-host.ts';

export class Pipeline<H> {
  readonly policy: ResolvedPolicy;
  readonly spec: FleetSpec;
  /** What it learns from outcomes: output lengths, prediction errors, queue budgets, waits. */
  readonly learned: Learned;
  readonly dispatcher: Dispatcher<H>;
  /** Each tenant's weighted service, which orders the bands (`policy.queueing`). */
  readonly vtc: VirtualTokenCounters;
  private readonly charges: ServiceCharges;
  private readonly admission: Admission;
  private readonly admissionState: unknown;
  /** A client deadline nearer than this is out of reach (up-front.ts). */
  private readonly deadlineMarginMs: Ms;
  private readonly sink: PipelineSink<H>;
  private readonly decisions: DecisionContext;
  private tickets: TicketTerms;
  /** Idempotency keys of tickets not yet ended: an attempt with one of these is a duplicate. */
  private readonly inFlightKeys = new Map<string, Ticket<H>>();
  private nowMs: Ms = 0;

  constructor(policy: ResolvedPolicy, spec: FleetSpec, sink: PipelineSink<H>) {
    this.policy = policy;
    this.spec = spec;
    this.sink = sink;
    this.learned = new Learned(policy);
    this.admission = ADMISSIONS[policy.admission.type](policy);
    this.admissionState = this.admission.initState();
    this.deadlineMarginMs = this.admission.deadlineMarginMs ?? 0;
    const weightOf = (tenant: string) => lookupTenant(policy.tenants, tenant)?.weight ?? 1;
    this.vtc = new VirtualTokenCounters(policy.queueing.cost, weightOf);
    this.charges = new ServiceCharges(this.vtc, spec.kvBytesPerToken);
    const classes = Object.values(policy.classes);
    const queueing = {
      order: policy.queueing.order,
      score: policy.queueing.score,
      vtc: this.vtc,
      pressedAbove: (priority: number, nowMs: Ms) =>
        classes.some(
          (c) => c.priority < priority && this.learned.queueDelay?.inForce(c.name, nowMs) === true,
        ),
    };
    this.dispatcher = new Dispatcher(
      policy.dispatch,
      queueing,
      spec,
      ROUTERS[policy.routing.type],
      (d) => this.apply(d),
      {
        seed: policy.routing.seed,
        prefix: { mode: policy.routing.prefixMode, capacityTokens: spec.replicaKvTokens },
        sessions: policy.routing.session,
        choices: policy.routing.choices,
      },
    );
    const clock = { now: () => this.nowMs };
    this.decisions = new DecisionContext(policy, spec, this.dispatcher, this.learned, clock);
    // A sink is fixed for the pipeline's life, so whether it wants decision records is too.
    this.tickets = {
      policy,
      revision: policy.revision,
      spec,
      outputs: this.learned.outputs,
      fullEstimate: sink.record !== undefined || policy.dispatch.type !== 'immediate',
    };
  }

  /** The policy revision in force: the policy's, then each reload's. */
  get revision(): string {
    return this.tickets.revision;
  }

  /** A reloaded policy's tenants, under its revision, for requests offered from now on. */
  retenant(tenants: TenantDirectory, revision: string): void {
    this.policy.tenants.replace(tenants);
    this.tickets = { ...this.tickets, revision };
    this.vtc.reweigh();
  }

  /** Applies what the dispatcher decided: the pipeline alone writes a ticket. */
  private apply(d: DispatchDecision<H>): void {
    const t = d.ticket;
    if (d.kind === 'expire') {
      this.expired(t);
      return;
    }
    // A hold is the dispatcher's own state (a replica kept for this ticket): the ticket still waits.
    if (d.kind === 'hold') return;
    t.entry = d.entry;
    t.replica = d.replica;
    t.hitTokens = d.hitTokens;
    t.dispatchedMs = this.nowMs;
    t.state = 'dispatched';
    this.charges.dispatched(t);
    this.learned.leftQueue(t, t.dispatchedMs);
    this.learned.dispatched(t);
    this.record(t, t.decision.outcome === 'admit' && t.decision.degradation ? 'degrade' : 'admit');
    this.sink.dispatch(t);
  }

  /** A request (or a retry of one) arrives; `replicas` are the ready replicas. */
  offer(
    asked: LlmRequest,
    handle: H,
    nowMs: Ms,
    replicas: readonly ReplicaSnapshot[],
    host: OfferContext = {},
  ): Offer<H> {
    // A request for a LoRA adapter is decided over the replicas that serve it (none ready: none).
    const serving = servingOnly(replicas, asked.adapter);
    const key = asked.idempotencyKey;
    // A retry whose kept turn has come waits behind no turn (queueing/kept-turns.ts).
    const turn =
      key === undefined ? undefined : (this.learned.turns?.standing(key, nowMs) ?? host.turn);
    const ctx = this.context(nowMs, serving, turn?.due === true);
    const cls = this.policy.classes[asked.sloClass];
    const decision: AdmissionDecision =
      refusedUpFront(asked, {
        nowMs,
        deadlineMarginMs: this.deadlineMarginMs,
        keyInFlight: key !== undefined && this.inFlightKeys.has(key),
        readyReplicas: serving.length,
        readyInMs: host.readyInMs,
      }) ?? this.admission.decide(this.admissionState, asked, ctx);
    if (decision.outcome === 'reject') {
      return { outcome: 'reject', decision: this.refuse(asked, decision, nowMs, turn) };
    }
    if (turn !== undefined && key !== undefined) this.learned.turns?.claim(key);
    const avoid = host.avoid ?? -1;
    const ticket = offerTicket<H>(this.tickets, asked, handle, cls, decision, nowMs, avoid, ctx);
    if (key !== undefined) this.inFlightKeys.set(key, ticket);
    if (decision.outcome === 'defer') {
      ticket.expiresMs = decision.deadlineMs;
      ticket.state = 'deferred';
      ticket.wasDeferred = true;
      this.dispatcher.defer(ticket);
    } else {
      this.admission.commit(this.admissionState, ticket.req, decision, ctx);
      // Queued, it is dropped once it cannot make its deadline; baselines leave that to engines.
      if (this.policy.dispatch.type !== 'immediate') ticket.expiresMs = admittedExpiry(ticket);
      ticket.long = this.dispatcher.isLong(ticket);
      ticket.gapShare = this.dispatcher.flow.gapShare;
      this.dispatcher.enqueue(ticket);
    }
    // Whatever the policy, nothing waits past the client's own deadline.
    ticket.expiresMs = Math.min(ticket.expiresMs, asked.deadlineMs ?? Infinity);
    this.pump(nowMs, replicas);
    return { outcome: ticket.state === 'deferred' ? 'deferred' : 'queued', ticket };
  }

  /**
   * The refusal `offer` would make of a request from its client deadline alone, which a host
   * can give before reading the request's body: that deadline has passed, or is nearer than
   * admission's margin. Undefined when only `offer` can tell.
   */
  refusedUnread(deadlineMs: Ms | undefined, nowMs: Ms): Rejection | undefined {
    return deadlineOutOfReach(deadlineMs, nowMs, this.deadlineMarginMs);
  }

  /**
   * The refusal `offer` would make, from the queue alone, of any request of `cls` from `tenant`
   * prefilling at most `promptTokensAtMost` tokens (`Admission.refuseUnread`): a host may give
   * it unread, with `refuse`. `replicas`: the ready ones, asked for only when it may refuse.
   */
  refusedForQueue(
    cls: SloClassName,
    tenant: string,
    promptTokensAtMost: Tokens,
    nowMs: Ms,
    replicas: () => readonly ReplicaSnapshot[],
  ): Rejection | undefined {
    const c = this.policy.classes[cls];
    if (c === undefined || this.admission.refuseUnread === undefined) return undefined;
    // The queue alone rules a request out only while its class's queue-delay control is in
    // force: otherwise nothing is asked, not even the replicas (the cost of every request read).
    if (this.learned.queueDelay?.inForce(cls, nowMs) !== true) return undefined;
    const ctx = this.context(nowMs, replicas());
    return this.admission.refuseUnread(ctx, c, tenant, promptTokensAtMost);
  }

  /** When a client deadline goes out of reach: from then on `refusedUnread` refuses it. */
  outOfReachAt(deadlineMs: Ms): Ms {
    return deadlineMs - this.deadlineMarginMs;
  }

  /**
   * A request at the door, before its tenant's quotas: `refusal` when it is not allowed at all
   * (a prompt no context holds is a 400, not a 429); else `charge`, its prompt plus its output
   * cap (or its p90 output, as the memory gate reserves), settled to what it used when it ends.
   */
  door(req: LlmRequest): { refusal: Rejection } | { refusal?: undefined; charge: Tokens } {
    const refusal = this.admission.refuseAsked?.(req, this.spec);
    if (refusal !== undefined) return { refusal };
    const cls = this.policy.classes[req.sloClass];
    return { charge: tenantCharge(req, cls, this.spec, this.learned.outputs) };
  }

  /** Dispatch what fits now; call whenever capacity may have freed or a deadline passed. */
  pump(nowMs: Ms, replicas: readonly ReplicaSnapshot[]): void {
    const ctx = this.context(nowMs, replicas);
    this.dispatcher.pump(nowMs, replicas, (t) => {
      const decision = this.admission.decide(this.admissionState, t.asked, ctx);
      if (decision.outcome !== 'admit') return false;
      t.decision = decision;
      t.req = served(t.asked, decision);
      t.demand = decision.assessment?.demand ?? t.demand;
      t.capTokens = outputCap(t.req, t.cls, this.spec.maxModelLen);
      this.admission.commit(this.admissionState, t.req, decision, ctx);
      return true;
    });
  }

  /**
   * A request refused before admission looked at it — its deadline already passed, no replica
   * ready, its key in flight — or by the host's own door (tenant quotas in shared state, a key
   * reused for another request, a gateway shutting down): recorded like any refusal, so every
   * request has its decision record whoever turned it away. Returns the refusal as its client
   * is to be told it: final, without a Retry-After, when no retry can meet its deadline.
   */
  refuse(asked: LlmRequest, refused: Rejection, nowMs: Ms, turn?: TurnStanding): Rejection {
    // A refusal for its wait keeps the class's queue-delay control in force.
    if (refused.reason === 'deadline') this.learned.refusedForWait(asked.sloClass, nowMs);
    const cls = this.policy.classes[asked.sloClass];
    const told = this.told(refused, asked, nowMs);
    const decision = keepTurn(this.learned.turns, told, asked, cls?.priority ?? 0, nowMs, turn);
    this.sink.record?.(refusalRecord(asked, cls, this.revision, nowMs, decision), asked);
    return decision;
  }

  /** A refusal as `asked`'s client is told it: final when a retry would miss its deadline. */
  told(refused: Rejection, asked: LlmRequest, nowMs: Ms): Rejection {
    return finalRefusal(refused, asked.deadlineMs, nowMs, this.deadlineMarginMs);
  }

  /**
   * A dispatched request stopped before its end by its client's deadline (or by the host
   * shutting down, `reason` saying which): recorded as its outcome, after the admission record.
   * The host still ends it (`end`) as for any stream.
   */
  cut(t: Ticket<H>, reason: RejectReason, status: RejectStatus, nowMs: Ms): void {
    this.nowMs = nowMs;
    const result = reason === 'deadline_exceeded' ? 'expire' : 'abort';
    this.sink.record?.(ticketRecord(t, t.revision, nowMs, result, reason, status), t.asked);
  }

  /** A waiting ticket's deadline timer fired: drop it if it is still waiting. */
  expire(t: Ticket<H>, nowMs: Ms): void {
    if (!t.queued || nowMs < t.expiresMs) return;
    this.nowMs = nowMs;
    this.dispatcher.withdraw(t);
    this.expired(t);
  }

  private expired(t: Ticket<H>): void {
    if (t.state === 'queued') {
      this.learned.leftQueue(t, this.nowMs);
      this.settle(t, 0);
    }
    this.forget(t);
    t.state = 'ended';
    const reason = expiryReason(t, this.nowMs);
    // As its client is told: soon, unless its own deadline will not wait (the host answers it).
    const told = this.told(expiredRefusal(reason), t.asked, this.nowMs);
    this.record(t, 'expire', reason, told.retryAfterMs);
    this.sink.expire(t, reason);
  }

  /** A replica's engine cached or evicted a prefix block (vLLM's KV events): for routing. */
  kvEvent(replica: number, kind: 'stored' | 'removed', hash: string): void {
    this.dispatcher.kvEvent(replica, kind, hash);
  }

  /** Replica `index` was removed (scaled in): what routing remembered of it is gone. */
  replicaGone(index: number): void {
    const router = this.dispatcher.router;
    router.prefix?.cleared(index);
    router.sessions?.forgetReplica(index);
    this.dispatcher.feed.replicaGone(index);
  }

  /** Requests waiting in the bands and the deferred queue now. */
  get queued(): number {
    return this.dispatcher.waiting.count();
  }

  /**
   * A ticket still waiting is withdrawn. Given `nowMs`, its client gave up on it, and that is
   * its record (`abort`, `client_closed`): it had none, admission's being written at dispatch.
   */
  withdraw(t: Ticket<H>, nowMs?: Ms): void {
    this.dispatcher.withdraw(t);
    if (t.state === 'queued') this.settle(t, 0);
    this.forget(t);
    t.state = 'ended';
    if (nowMs === undefined) return;
    this.nowMs = nowMs;
    this.record(t, 'abort', 'client_closed');
  }

  firstToken(t: Ticket<H>, ttftMs: Ms): void {
    const atMs = t.asked.arrivalMs + ttftMs;
    if (t.entry !== null) this.dispatcher.feed.started(t.entry, atMs);
    // Its last piece computed, a staged prompt's blocks are all cached: indexed now, not before.
    if (t.entry?.pieceTokens !== undefined) this.dispatcher.router.placed(t, t.replica);
    this.learned.firstToken(t, ttftMs);
    this.charges.token(t, atMs);
  }

  /** Another token streamed at `nowMs` (the KV term of the cost and the replica's pace need the time). */
  token(t: Ticket<H>, nowMs: Ms): void {
    if (t.entry !== null) this.dispatcher.feed.streamed(t.entry, nowMs);
    this.charges.token(t, nowMs);
  }

  /** `t`'s client got a gap of `gapMs` at `atMs`, timed where it reads it (`gap-feedback.ts`). */
  gapDelivered(t: Ticket<H>, gapMs: Ms, atMs: Ms): void {
    if (t.entry !== null) this.dispatcher.feed.delivered(t.entry, gapMs, atMs);
  }

  /**
   * A dispatched ticket ended (at `nowMs`, for the KV term of the cost) with `outputTokens` in
   * all; `completed` when it ran to its natural end (EOS or max tokens). `each` choice's tokens,
   * when given, are what a request for several has the length model learn, one by one.
   */
  end(t: Ticket<H>, outputTokens: Tokens, completed: boolean, nowMs?: Ms, each?: Tokens[]): void {
    if (t.state === 'ended') return;
    if (t.entry !== null) this.dispatcher.feed.ended(t.entry, nowMs);
    // A host that does not report every token (a baseline's) is charged for them at the end.
    this.charges.ended(t, outputTokens, nowMs);
    this.forget(t);
    t.state = 'ended';
    this.settle(t, outputTokens);
    this.learned.ended(t, each ?? [outputTokens], completed);
  }

  private forget(t: Ticket<H>): void {
    const key = t.asked.idempotencyKey;
    if (key !== undefined && this.inFlightKeys.get(key) === t) this.inFlightKeys.delete(key);
  }

  private settle(t: Ticket<H>, outputTokens: Tokens): void {
    const gpuMs = servedGpuMs(t.demand, choicesOf(t.req), outputTokens);
    this.admission.settle(this.admissionState, t.req, outputTokens, gpuMs, this.nowMs);
  }

  /** True while requests wait in the queues: only then can a pump do anything. */
  get waiting(): boolean {
    return this.dispatcher.hasWaiting();
  }

  /** The admission context at `nowMs` over `replicas` (`DecisionContext.at`). */
  private context(nowMs: Ms, replicas: readonly ReplicaSnapshot[], turn = false): AdmissionContext {
    this.nowMs = nowMs;
    return this.decisions.at(replicas, turn);
  }

  private record(t: Ticket<H>, result: DecisionResult, reason?: RejectReason, after?: Ms): void {
    const r = ticketRecord(t, t.revision, this.nowMs, result, reason, undefined, after);
    this.sink.record?.(r, t.asked);
  }
}
