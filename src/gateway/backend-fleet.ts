/**
 * The backends as the pipeline sees them: which are ready, what each reports of its load, how
 * many requests the gateway has sent each, and a circuit breaker each. `snapshots` is the fleet
 * a decision is made over: a backend is in it while it is ready and its breaker is not open —
 * half-open, as a probe that takes one request (`dispatched` marks the probe out) — and while it
 * is not being drained (`setDraining`: scale-in stops routing to it first). Only a
 * backend's own failures count against it (`failed`): no answer, a 5xx, a broken stream; a 4xx
 * is the request's fault and a success for the breaker, a 429 says nothing, and a request the
 * gateway stopped (client gone, deadline, shutdown) is `abandoned`. Every change — readiness,
 * breaker state — is told once, as a metric and a log line, also when no request looks: a slow
 * watch reads the fleet on its own.
 */
import type { ResilienceConfig } from '../core/config/resilience-schema.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import type { Ms } from '../core/request/units.ts';
import { CircuitBreaker } from '../core/resilience/circuit-breaker.ts';
import type { ReplicaSnapshot } from '../core/fleet/replica-snapshot.ts';
import { PlanNotes, type PlannedSpec } from './plan-notes.ts';
import type { Backend, StreamEnd, UpstreamError } from './backend.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import type { OpsLog } from './ops-log.ts';
import type { Ticket } from '../core/queueing/ticket.ts';
import { silentLimitMs } from './upstream-attempt.ts';

/** How often readiness is looked at for up/down lines when no request looks. */
const WATCH_EVERY_MS = 1_000;
/** Retry-After for want of a ready backend when none has a breaker about to probe. */
const UNREADY_RETRY_MS: Ms = 1_000;

export interface FleetDeps {
  readonly backends: readonly Backend[];
  readonly breaker: ResilienceConfig['breaker'];
  readonly clock: Clock;
  readonly timers: Timers;
  readonly metrics: GatewayMetrics;
  readonly log: OpsLog;
  /** What the gateway plans with, which a backend saying otherwise is logged against. */
  readonly spec: PlannedSpec;
  /**
   * A backend that served went down (not ready, or stopped by its pool): what routing remembers
   * of it — its prefix cache, its sessions — is gone, as a restarted server's cache is.
   */
  readonly onDown?: (index: number) => void;
}

export class BackendFleet {
  readonly backends: readonly Backend[];
  private readonly deps: FleetDeps;
  /** Requests the gateway has sent each backend that have not ended. */
  private readonly inFlight: number[];
  private readonly breakers: CircuitBreaker[];
  /** Each backend's readiness as last told (null: not yet). */
  private readonly wasReady: (boolean | null)[];
  /** Whether a backend's start is over: it was ready once, or why it is not yet was said. */
  private readonly startTold: boolean[];
  private readonly preemptionsSeen: number[];
  /** What each backend reports against the gateway's plan, logged once each. */
  private readonly notes: PlanNotes;
  private readonly draining: boolean[];
  /** Whether a backend was logged to send tokens past the output cap (once each). */
  private readonly pastCapTold: boolean[];
  /** Whether a backend's refusal of the gateway's credentials was logged (once a backend). */
  private readonly credentialsTold: boolean[];
  /** Whether a backend's pool stopped it, and its gauge was set so (`running`). */
  private readonly downAsMeant: boolean[];
  private watchTimer: TimerHandle | null = null;
  /** Whether a backend is meant to be up: a pool's stopped slot is not (`running`). */
  private runs: (index: number) => boolean = () => true;

  constructor(deps: FleetDeps) {
    this.deps = deps;
    this.backends = deps.backends;
    const m = deps.metrics;
    this.inFlight = deps.backends.map(() => 0);
    this.wasReady = deps.backends.map(() => null);
    this.startTold = deps.backends.map(() => false);
    this.preemptionsSeen = deps.backends.map(() => 0);
    this.notes = new PlanNotes(
      deps.spec,
      deps.log,
      deps.backends.map((b) => b.name),
    );
    this.draining = deps.backends.map(() => false);
    this.pastCapTold = deps.backends.map(() => false);
    this.credentialsTold = deps.backends.map(() => false);
    this.downAsMeant = deps.backends.map(() => false);
    this.breakers = deps.backends.map((b) => {
      m.breakerState(b.name, 'closed');
      return new CircuitBreaker(deps.clock, {
        ...deps.breaker,
        onChange: (from, to) => {
          m.breakerState(b.name, to);
          m.breakerTransitions.inc({ backend: b.name, to });
          const level = to === 'open' ? 'warn' : 'info';
          deps.log[level]({ backend: b.name, from, to }, `circuit breaker ${from} → ${to}`);
        },
      });
    });
    this.watch();
  }

  /** Usable backends as the pipeline sees them; the index is the backend's position. */
  snapshots(): ReplicaSnapshot[] {
    const out: ReplicaSnapshot[] = [];
    this.backends.forEach((b, index) => {
      const load = b.load();
      this.noteReadiness(index, load.ready, load.why);
      if (load.preemptions !== undefined) this.notePreemptions(index, load.preemptions);
      if (load.servable !== undefined) this.notes.servable(index, load.servable);
      if (load.listed !== undefined) this.notes.listing(index, load.listed);
      if (!load.ready || this.draining[index]) return;
      const breaker = this.breakers[index];
      const state = breaker.state;
      if (state === 'open' || (state === 'half-open' && breaker.probing)) return;
      out.push({
        index,
        inFlight: this.inFlight[index],
        running: load.running,
        waiting: load.waiting,
        ...(load.others === undefined ? {} : { others: load.others }),
        kvUsage: load.kvUsage,
        ...(load.kvCapacityTokens === undefined ? {} : { kvCapacityTokens: load.kvCapacityTokens }),
        ...(load.loras === undefined ? {} : { loras: load.loras }),
        // Routing sends a request for an adapter only where it is served (`servable` filter).
        ...(load.servable === undefined ? {} : { servable: load.servable }),
        probe: state === 'half-open',
      });
    });
    return out;
  }

  /**
   * The backends' gauges, what they report against the plan (`max_loras`, KV), and what
   * `snapshots` notes (readiness, preemptions, adapters): at a scrape and on the watch's tick,
   * not per request — a gauge is only read at a scrape.
   */
  observe(): void {
    const m = this.deps.metrics;
    this.backends.forEach((b, index) => {
      const load = b.load();
      m.backendKv.set({ backend: b.name }, load.kvUsage);
      if (load.others !== undefined) m.backendOthers.set({ backend: b.name }, load.others);
      if (load.maxLoras !== undefined) this.notes.maxLoras(index, load.maxLoras);
      if (load.kvCapacityTokens !== undefined) {
        m.backendKvCapacity.set({ backend: b.name }, load.kvCapacityTokens);
        this.notes.kvCapacity(index, load.kvCapacityTokens);
      }
      if (load.prefixHitRate !== undefined) {
        m.backendPrefixHit.set({ backend: b.name }, load.prefixHitRate);
      }
    });
    this.snapshots();
  }

  get ready(): boolean {
    return this.backends.some((b, i) => b.load().ready && this.breakers[i].state !== 'open');
  }

  /** With no backend usable: until one may be (the soonest breaker probe, or the next scrape). */
  readyInMs(): Ms {
    let soonest = Infinity;
    this.backends.forEach((b, i) => {
      const wait = this.breakers[i].msUntilProbe();
      soonest = Math.min(soonest, b.load().ready && wait > 0 ? wait : UNREADY_RETRY_MS);
    });
    return Number.isFinite(soonest) ? soonest : UNREADY_RETRY_MS;
  }

  /** Whether backend `index` reports itself ready (drained or not, breaker aside). */
  isReady(index: number): boolean {
    return this.backends[index].load().ready;
  }

  /** Draining: no new request is routed to backend `index`; those under way go on. */
  setDraining(index: number, on: boolean): void {
    this.draining[index] = on;
  }

  /** Streams the gateway has under way on backend `index`. */
  inFlightOn(index: number): number {
    return this.inFlight[index];
  }

  /**
   * Which backends an engine pool runs now: one it stopped, or has not started, is down as
   * meant, and its readiness is not news (told again once it runs).
   */
  running(runs: (index: number) => boolean): void {
    this.runs = runs;
  }

  /** What backend `index` last reported running and waiting, while its figures are fresh. */
  reportedOn(index: number): { busy: number; atMs: Ms } | undefined {
    const load = this.backends[index].load();
    return load.ready ? { busy: load.running + load.waiting, atMs: load.atMs } : undefined;
  }

  /** A request was placed on `replica`: a half-open backend's one probe is now out. */
  dispatched(replica: number): void {
    this.breakers[replica].allows();
  }

  /** Its stream starts: it counts against the backend until `ended`. */
  started(replica: number): void {
    this.inFlight[replica]++;
  }

  ended(replica: number): void {
    this.inFlight[replica]--;
  }

  /**
   * Its stream ended well. One cut at the output cap still answered the client, but a backend
   * that ignores `max_tokens` spends the fleet's capacity on tokens nobody gets: said once.
   */
  succeeded(replica: number, end: StreamEnd): void {
    this.breakers[replica].record(true);
    if (end.pastCap !== true || this.pastCapTold[replica]) return;
    this.pastCapTold[replica] = true;
    const name = this.backends[replica].name;
    this.deps.log.warn(
      { backend: name },
      `backend ${name} sent more tokens than max_tokens asked: its streams are cut at the cap`,
    );
  }

  /**
   * What an upstream failure says of the backend's health: a 4xx answer that is the request's
   * fault (the backend is up: a success), a 429 says nothing, anything else — no connection, a
   * 5xx, a stream that broke, a 401 or 403 to the gateway's own credentials — is a failure.
   */
  failed(replica: number, e: UpstreamError): void {
    const breaker = this.breakers[replica];
    if (!e.requestAtFault) {
      const stage = e.beforeFirstToken ? 'before_first_token' : 'streaming';
      this.deps.metrics.upstreamFailures.inc({ backend: this.backends[replica].name, stage });
    }
    if (e.status === 429) breaker.abandon();
    else breaker.record(e.requestAtFault);
    if ((e.status === 401 || e.status === 403) && !this.credentialsTold[replica]) {
      this.credentialsTold[replica] = true;
      const name = this.backends[replica].name;
      this.deps.log.error(
        { backend: name, status: e.status },
        `backend ${name} refused the gateway's credentials (HTTP ${e.status}): give the gateway the key it requires (--backend-api-key, or $GOODPUT_BACKEND_API_KEY)`,
      );
    }
  }

  /** The request ended without saying anything of the backend's health. */
  abandoned(replica: number): void {
    this.breakers[replica].abandon();
  }

  /**
   * A request its client or deadline stopped: nothing said of the backend's health, unless no
   * token had come long past when one should have (`silentLimitMs`) — a failure then, as a
   * stream gone quiet is: a backend that accepts requests and never answers is taken out by its
   * breaker, not fed every request whose client gives up first.
   */
  stopped(replica: number, ticket: Ticket<unknown>, firstTokenMs: Ms | undefined): void {
    const silentMs = firstTokenMs === undefined ? this.deps.clock.now() - ticket.dispatchedMs : 0;
    if (silentMs < silentLimitMs(ticket)) return this.breakers[replica].abandon();
    this.breakers[replica].record(false);
    this.deps.metrics.upstreamFailures.inc({
      backend: this.backends[replica].name,
      stage: 'silent',
    });
  }

  async close(): Promise<void> {
    this.watchTimer?.cancel();
    this.watchTimer = null;
    await Promise.all(this.backends.map((b) => b.close()));
  }

  private noteReadiness(index: number, ready: boolean, why: string | undefined): void {
    const name = this.backends[index].name;
    if (!this.runs(index)) {
      // Down as meant: nothing to say, and its start, when it comes, is told afresh. Looked at
      // on every admission: the gauge is set once, as it stops.
      if (this.downAsMeant[index]) return;
      this.downAsMeant[index] = true;
      if (this.wasReady[index] === true) this.deps.onDown?.(index);
      this.startTold[index] = false;
      this.wasReady[index] = null;
      this.deps.metrics.backendReady.set({ backend: name }, 0);
      return;
    }
    this.downAsMeant[index] = false;
    if (!this.startTold[index] && (ready || why !== undefined)) {
      this.startTold[index] = true;
      // Not ready since start: no alarm (an engine loads its weights for minutes), but its cause
      // is said once, or a wrong URL goes unsaid.
      if (!ready) {
        this.deps.log.info(
          { backend: name, cause: why },
          `backend ${name} is not ready yet: ${why}`,
        );
      }
    }
    if (this.wasReady[index] === ready) return;
    const first = this.wasReady[index] === null;
    this.wasReady[index] = ready;
    this.deps.metrics.backendReady.set({ backend: name }, ready ? 1 : 0);
    // A backend not ready yet at start is not news; one that goes down, or comes up, is.
    if (first && !ready) return;
    if (ready) this.deps.log.info({ backend: name }, `backend ${name} is ready`);
    else {
      this.deps.log.warn({ backend: name, cause: why }, `backend ${name} is not ready`);
      this.deps.onDown?.(index);
    }
  }

  /** Backends report a running total; the counter follows it (a restart starts it again). */
  private notePreemptions(index: number, total: number): void {
    const seen = this.preemptionsSeen[index];
    const added = total >= seen ? total - seen : total;
    this.preemptionsSeen[index] = total;
    if (added > 0) {
      this.deps.metrics.backendPreemptions.inc({ backend: this.backends[index].name }, added);
    }
  }

  private watch(): void {
    const tick = () => {
      this.observe();
      this.watchTimer = this.deps.timers.at(this.deps.clock.now() + WATCH_EVERY_MS, tick);
    };
    this.watchTimer = this.deps.timers.at(this.deps.clock.now(), tick);
  }
}
