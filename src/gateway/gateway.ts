/**
 * The gateway's engine room: hosts the policy pipeline on the wall clock. `admit` decides a
 * request before any byte is sent — rejected, or dispatched to a backend once flow control lets
 * it go, or expired/aborted while it waited; `run` streams it from that backend, reporting
 * every token to the pipeline (ledger, budgets, estimators) and the metrics, and falls over to
 * another backend when one fails before the first token and the deadline still allows. The HTTP
 * layer only translates; the stage order lives in the pipeline.
 */
import type { AdmissionDecision } from '../core/admission/admission.ts';
import type { ResolvedPolicy } from '../core/config/policy.ts';
import type { FleetSpec } from '../core/estimate/fleet-spec.ts';
import type { DecisionRecord } from '../core/observe/decision-record.ts';
import { Pipeline } from '../core/pipeline.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { Timers } from '../core/ports/timers.ts';
import type { Ticket } from '../core/queueing/ticket.ts';
import type { LlmRequest } from '../core/request/request.ts';
import type { ReplicaSnapshot } from '../core/routing/replica-snapshot.ts';
import type { ApiKind, Backend, StreamEnd, TokenSink } from './backend.ts';
import { isUpstreamError } from './backend.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import { StreamMeter } from './stream-meter.ts';
import { CircuitBreaker } from '../core/resilience/circuit-breaker.ts';
import { lookupTenant } from '../core/config/tenant-schema.ts';

export interface GatewayDeps {
  readonly policy: ResolvedPolicy;
  readonly spec: FleetSpec;
  readonly backends: readonly Backend[];
  readonly clock: Clock;
  readonly timers: Timers;
  readonly metrics: GatewayMetrics;
  readonly onDecision?: (record: DecisionRecord) => void;
}

/** The gateway's side of one waiting or dispatched request. */
class Waiter {
  resolve: (how: 'dispatched' | 'expired') => void = () => {};
  readonly settled = new Promise<'dispatched' | 'expired'>((r) => (this.resolve = r));
}

export type Admitted =
  | {
      readonly kind: 'rejected';
      readonly decision: Extract<AdmissionDecision, { outcome: 'reject' }>;
    }
  | { readonly kind: 'expired' }
  | { readonly kind: 'aborted' }
  | { readonly kind: 'dispatched'; readonly ticket: Ticket<Waiter> };

const PUMP_EVERY_MS = 50;

export class Gateway {
  readonly pipeline: Pipeline<Waiter>;
  private readonly deps: GatewayDeps;
  private readonly inFlight: number[];
  /** Per backend: consecutive upstream failures open it, and it leaves the fleet until a probe succeeds. */
  private readonly breakers: CircuitBreaker[];
  private pumpTimer: { cancel(): void } | null = null;

  constructor(deps: GatewayDeps) {
    this.deps = deps;
    this.inFlight = deps.backends.map(() => 0);
    this.breakers = deps.backends.map(() => new CircuitBreaker(deps.clock, 3, 5_000));
    this.pipeline = new Pipeline<Waiter>(deps.policy, deps.spec, {
      dispatch: (t) => t.handle.resolve('dispatched'),
      expire: (t) => t.handle.resolve('expired'),
      record: (r) => {
        deps.metrics.decisions.inc({
          outcome: r.admission.result,
          reason: r.admission.reason ?? 'none',
          class: r.class,
          tenant: deps.metrics.tenant(r.tenant),
        });
        deps.onDecision?.(r);
      },
    });
    deps.metrics.policy.set({ policy: deps.policy.name, policy_revision: deps.policy.revision }, 1);
  }

  /** Refreshes the gauges a scrape reads (queue, shares, backends). */
  observe(): void {
    this.observeQueue();
    this.observeShares();
    this.snapshots();
  }

  /** Ready backends as the pipeline sees them; the index is the backend's position. */
  snapshots(): ReplicaSnapshot[] {
    const out: ReplicaSnapshot[] = [];
    this.deps.backends.forEach((b, index) => {
      const load = b.load();
      this.deps.metrics.backendReady.set({ backend: b.name }, load.ready ? 1 : 0);
      this.deps.metrics.backendKv.set({ backend: b.name }, load.kvUsage);
      if (load.prefixHitRate !== undefined) {
        this.deps.metrics.backendPrefixHit.set({ backend: b.name }, load.prefixHitRate);
      }
      if (load.preemptions !== undefined) {
        this.deps.metrics.backendPreemptions.set({ backend: b.name }, load.preemptions);
      }
      if (!load.ready || this.breakers[index].state === 'open') return;
      out.push({
        index,
        inFlight: this.inFlight[index],
        running: load.running,
        waiting: load.waiting,
        kvUsage: load.kvUsage,
      });
    });
    return out;
  }

  get ready(): boolean {
    return this.deps.backends.some((b) => b.load().ready);
  }

  /** `avoid`: the backend a failed earlier attempt of this request used (−1: none). */
  async admit(req: LlmRequest, signal: AbortSignal, avoid = -1): Promise<Admitted> {
    const m = this.deps.metrics;
    m.offered.inc({ class: req.sloClass, tenant: m.tenant(req.tenant) });
    m.offeredTokens.inc({ class: req.sloClass }, req.inputTokens);
    if ((req.attempt ?? 1) > 1) m.retries.inc({ class: req.sloClass });
    const waiter = new Waiter();
    const offer = this.pipeline.offer(req, waiter, this.deps.clock.now(), this.snapshots(), avoid);
    if (offer.outcome === 'reject') {
      if (offer.decision.reason === 'duplicate') m.duplicates.inc();
      return { kind: 'rejected', decision: offer.decision };
    }
    const ticket = offer.ticket;
    if (ticket.state === 'dispatched') return { kind: 'dispatched', ticket };
    const expiry = Number.isFinite(ticket.expiresMs)
      ? this.deps.timers.at(ticket.expiresMs, () =>
          this.pipeline.expire(ticket, this.deps.clock.now()),
        )
      : null;
    let aborted = false;
    const onAbort = () => {
      aborted = true;
      this.pipeline.withdraw(ticket);
      m.cancels.inc({ class: req.sloClass, stage: 'queued' });
      waiter.resolve('expired');
    };
    signal.addEventListener('abort', onAbort, { once: true });
    this.keepPumping();
    const how = await waiter.settled;
    signal.removeEventListener('abort', onAbort);
    expiry?.cancel();
    if (aborted) return { kind: 'aborted' };
    return how === 'dispatched' ? { kind: 'dispatched', ticket } : { kind: 'expired' };
  }

  /**
   * Streams a dispatched request from its backend, handing each token to `onToken` once the
   * pipeline and the metrics have counted it. Resolves with the backend's end, or rejects: an
   * upstream failure (after the first token the client must be told in-stream), or the abort.
   */
  async run(
    ticket: Ticket<Waiter>,
    kind: ApiKind,
    body: Record<string, unknown>,
    signal: AbortSignal,
    onToken: TokenSink,
  ): Promise<StreamEnd> {
    const { clock, metrics } = this.deps;
    const cls = ticket.cls;
    const meter = new StreamMeter(clock, ticket.asked.arrivalMs, ticket.capTokens);
    const follow = this.pipeline.followsTokens;
    // Series and cells resolved once per request: the per-token path does no label hashing.
    const itl = metrics.itl.series({ class: cls.name });
    const served = metrics.servedBy(ticket.req.tenant);
    const replica = ticket.replica;
    const counted: TokenSink = (token) => {
      const gap = meter.token();
      if (gap === undefined) {
        const ttft = (meter.firstTokenMs ?? 0) - meter.arrivalMs;
        this.pipeline.firstToken(ticket, ttft);
        metrics.observeClass(metrics.ttft, cls.name, ttft / 1000);
        const queued = ticket.dispatchedMs - meter.arrivalMs;
        metrics.observeClass(metrics.ttftQueue, cls.name, queued / 1000);
        metrics.observeClass(metrics.ttftUpstream, cls.name, (ttft - queued) / 1000);
      } else {
        if (follow) this.pipeline.token(ticket, clock.now());
        itl.observe(gap / 1000);
      }
      served.tokens += 2;
      onToken(token);
    };
    this.inFlight[replica]++;
    let end: StreamEnd | undefined;
    try {
      end = await this.deps.backends[replica].stream(
        { id: ticket.req.id, kind, body: servedBody(body, ticket.req), signal },
        counted,
      );
      served.tokens += end.promptTokens;
      const parts = end.ttftParts;
      if (parts !== undefined) {
        metrics.observeClass(metrics.ttftBackendQueue, cls.name, parts.queueMs / 1000);
        metrics.observeClass(metrics.ttftPrefill, cls.name, parts.prefillMs / 1000);
        metrics.observeClass(metrics.ttftFirstDecode, cls.name, parts.firstDecodeMs / 1000);
      }
      this.breakers[replica].record(true);
      return end;
    } catch (e) {
      if (signal.aborted) metrics.cancels.inc({ class: cls.name, stage: 'streaming' });
      else if (isUpstreamError(e)) this.breakers[replica].record(false);
      throw e;
    } finally {
      this.inFlight[replica]--;
      const completed = end !== undefined;
      const outputTokens = end?.completionTokens ?? meter.tokens;
      this.pipeline.end(ticket, outputTokens, completed);
      if (completed) {
        metrics.completed.inc({ class: cls.name });
        if (meter.lastTokenMs !== undefined) {
          metrics.observeClass(metrics.e2e, cls.name, (meter.lastTokenMs - meter.arrivalMs) / 1000);
        }
        if (meter.judge(cls, true) === null) {
          metrics.good.inc({ class: cls.name });
          metrics.goodTokens.inc({ class: cls.name }, outputTokens);
        }
      }
      this.pump();
    }
  }

  pump(): void {
    if (this.pipeline.waiting) this.pipeline.pump(this.deps.clock.now(), this.snapshots());
  }

  async close(): Promise<void> {
    this.pumpTimer?.cancel();
    this.pumpTimer = null;
    await Promise.all(this.deps.backends.map((b) => b.close()));
  }

  private observeQueue(): void {
    const d = this.pipeline.dispatcher;
    const m = this.deps.metrics;
    const now = this.deps.clock.now();
    let count = 0;
    let work = 0;
    let slack = Infinity;
    let oldest = Infinity;
    for (const t of d.waitingTickets()) {
      count++;
      work += t.demand.workP90Ms;
      slack = Math.min(slack, t.expiresMs - now);
      oldest = Math.min(oldest, t.offeredMs);
    }
    m.queued.set(count);
    m.queuedWork.set(work / 1000);
    m.earliestSlack.set(slack / 1000);
    m.queueAge.set(Number.isFinite(oldest) ? (now - oldest) / 1000 : 0);
  }

  private observeShares(): void {
    let total = 0;
    let weights = 0;
    const weightOf = (t: string) => lookupTenant(this.deps.policy.tenants, t)?.weight ?? 1;
    const served = this.deps.metrics.served;
    for (const [t, { tokens }] of served) {
      total += tokens;
      weights += weightOf(t);
    }
    if (total === 0) return;
    for (const [t, { tokens }] of served) {
      this.deps.metrics.shareDeviation.set(
        { tenant: this.deps.metrics.tenant(t) },
        tokens / total - weightOf(t) / weights,
      );
    }
  }

  /** While anything waits, re-check on a short tick: backend load can free capacity too. */
  private keepPumping(): void {
    if (this.pumpTimer !== null) return;
    const tick = () => {
      this.pumpTimer = null;
      this.pump();
      this.observeQueue();
      if (this.pipeline.waiting) {
        this.pumpTimer = this.deps.timers.at(this.deps.clock.now() + PUMP_EVERY_MS, tick);
      }
    };
    this.pumpTimer = this.deps.timers.at(this.deps.clock.now() + PUMP_EVERY_MS, tick);
  }
}

/** The body as admission decided to serve it: a degraded output cap goes upstream. */
function servedBody(body: Record<string, unknown>, served: LlmRequest): Record<string, unknown> {
  if (served.maxTokens === undefined) return body;
  return { ...body, max_tokens: served.maxTokens, max_completion_tokens: undefined };
}
