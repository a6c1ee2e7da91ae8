/**
 * Assembles a running gateway: the policy, the fleet facts its predictions use (from the named
 * model and GPU profile), the backends (OpenAI-compatible URLs, or an embedded simulated fleet
 * when none are given), the shared state (in memory, or Redis for several replicas), the Hono
 * app, and a listening Node server. Returns the URL, a `drain` that ends it the way Kubernetes
 * expects (not ready at once, new requests refused, those in flight finished or — past the
 * drain time — cut with an error event, every lease given back, then everything closed and the
 * last request traces sent), and a `close` that stops everything at once. A port in use is a
 * ConfigError naming it.
 */
import type { Server } from 'node:http';
import type { ResolvedPolicy } from '../core/config/policy.ts';
import type { DecisionRecord } from '../core/observe/decision-record.ts';
import type { RejectReason } from '../core/request/decision.ts';
import type { OutcomeRecord } from '../core/observe/outcome-record.ts';
import type { EngineConfig } from '../engine/engine-types.ts';
import type { TimingProfile } from '../engine/timing/profile.ts';
import { randomId } from '../runtime/entropy-rng.ts';
import { epochMs, wallClock } from '../runtime/wall-clock.ts';
import { wallTimers } from '../runtime/wall-timers.ts';
import { apiKeys } from './api-keys.ts';
import type { Backend } from './backend.ts';
import { TextRing } from './text-ring.ts';
import { Gateway } from './gateway.ts';
import { GatewayMetrics } from './gateway-metrics.ts';
import { HttpBackend } from './http-backend.ts';
import { callingTools } from './filler-calls.ts';
import type { ScaleExportSettings } from './scale-export.ts';
import { PeerWindows } from './peer-windows.ts';
import { serverBaseUrl } from '../openai/server-url.ts';
import { DashboardFeed } from './dashboard-feed.ts';
import { createGatewayApp, type GatewayEnv } from './http/app.ts';
import { nodeListener } from './http/node-listener.ts';
import type { Hono } from 'hono';
import type { FailurePolicy } from './shared/failover-store.ts';
import { logStoreTransition, openSharedStore } from './shared/open-store.ts';
import { RESPONSE_TTL_MS } from './shared/shared-store.ts';
import { SharedTurns } from './shared-turns.ts';
import { BackgroundRuns } from './http/background-runs.ts';
import { adopt } from './http/background-handover.ts';
import type { Ms } from '../core/request/units.ts';
import type { SloClassName } from '../core/request/slo-classes.ts';
import { InFlight } from './http/in-flight.ts';
import { LagShedder } from './http/lag-shedder.ts';
import { ConnectionIntake, lineLimitMs } from './http/connection-intake.ts';
import { Listeners, listen, warnOnOpenFileLimit } from './http/listeners.ts';
import { serverForwarder } from './http/server-routes.ts';
import { listenStatus, portOf } from './http/status-listener.ts';
import { SILENT_OPS_LOG, type OpsLog } from './ops-log.ts';
import { PolicyReloader } from './policy-reloader.ts';
import { LearnedImageTokens } from './url-image-tokens.ts';
import type { LoadedPolicy } from '../sim/policy-source.ts';
import { LearnedPersistence, type LearnedStateStore } from './learned-state-store.ts';
import { NO_TRACING, type RequestTracer } from './tracing/request-trace.ts';
import type { ImageTokens } from '../openai/image-size.ts';
import { fleetSpecFor } from './fleet-spec-for.ts';
import { shutdownOf } from './serve-shutdown.ts';
import { PromptScale } from '../core/estimate/prompt-scale.ts';
import { refuseUnservedModels } from '../core/config/tenant-schema.ts';

export interface ServeOptions {
  readonly policy: ResolvedPolicy;
  /** `policy`'s file, read again on a reload (policy-reloader.ts); absent: it does not reload. */
  readonly policySource?: LoadedPolicy;
  /** The engine the backends run (or are assumed to run): limits, KV and timing predictions. */
  readonly engine: EngineConfig;
  readonly profile: TimingProfile;
  readonly servedModelName: string;
  /** OpenAI-compatible base URLs; empty: `embedded()` provides the fleet. */
  readonly backendUrls: readonly string[];
  readonly embedded: () => Backend[] | Promise<Backend[]>;
  readonly host: string;
  readonly port: number;
  /**
   * A second port for the probes and the scrape, outside the API port's line of new connections
   * (http/status-listener.ts); none: the API port alone.
   */
  readonly statusPort?: number;
  readonly adminToken?: string;
  /** The key the backends at `backendUrls` require (vLLM's `--api-key`); none: they are open. */
  readonly backendApiKey?: string;
  /** Each decision record, and its JSON text (as the decision lookup keeps it). */
  readonly onDecision?: (record: DecisionRecord, json: string) => void;
  /** How each dispatched request ended, and its JSON text. */
  readonly onOutcome?: (record: OutcomeRecord, json: string) => void;
  /** A policy reload that put a new revision in force, as JSON text (`PolicyReloader`). */
  readonly onPolicyApplied?: (json: string) => void;
  readonly scrapeIntervalMs?: number;
  /** State shared with other gateway replicas; absent: in memory. */
  readonly shared?: SharedStateSettings;
  /** Operational lines (backends, breakers, store, drain); default: none. */
  readonly log?: OpsLog;
  readonly bodyLimitBytes?: number;
  /** Overrides the policy's `resilience.shed_lag_ms` (tests: 0, never shed). */
  readonly shedLagMs?: Ms;
  /**
   * The autoscaler whose decision `/metrics` exports (`goodput_desired_replicas`), and the pool
   * that acts on it if any; none: off.
   */
  readonly autoscale?: ScaleExportSettings;
  /** Where each request's trace goes (tracing/); default: nowhere. The gateway closes it last. */
  readonly tracer?: RequestTracer;
  /**
   * Where what the pipeline learns is kept across restarts: restored before the gateway takes
   * requests, saved every `intervalMs` and at shutdown; absent: every start is cold.
   */
  readonly learnedState?: { readonly store: LearnedStateStore; readonly intervalMs: Ms };
  /**
   * How long the Responses API's responses are kept for their next turn, 0 for none (default:
   * a day), and the most bytes of them one process holds in memory (default: 256 MiB).
   */
  readonly keptResponses?: { readonly ttlMs: Ms; readonly capacityBytes?: number };
  /** The prompt tokens an image takes in the served model (image-size.ts); absent: refused. */
  readonly imageTokens?: ImageTokens;
}

export interface SharedStateSettings {
  /** `redis://host:port`. */
  readonly redisUrl: string;
  /** While Redis is unreachable: serve under local limits (`open`) or refuse (`closed`). */
  readonly failure: FailurePolicy;
  /** Gateway replicas sharing the quotas: the local limits are 1/replicas of each. */
  readonly replicas: number;
}

export interface RunningGateway {
  readonly url: string;
  /** The status port's base URL, when it has one. */
  readonly statusUrl?: string;
  /** The HTTP surface itself, for in-process requests (`app.request`). */
  readonly app: Hono<GatewayEnv>;
  readonly gateway: Gateway;
  /** The policy in force, and its reloads (SIGHUP, `POST /admin/policy/reload`). */
  readonly policy: PolicyReloader;
  readonly embedded: boolean;
  /**
   * Ends the gateway gracefully: `/readyz` turns 503 and new requests are refused (503
   * `shutting_down`) at once; requests in flight run on for up to `timeoutMs`, then the rest
   * are stopped (an SSE error event naming the shutdown); when each has given back what it held,
   * everything closes. Resolves with how many ended on their own and how many were cut.
   */
  drain(timeoutMs: Ms): Promise<{ readonly finished: number; readonly cut: number }>;
  /** Stops every request still in flight now: a second signal does not wait for the drain. */
  cutNow(): void;
  close(): Promise<void>;
}

export async function startGateway(o: ServeOptions): Promise<RunningGateway> {
  // The base model, and the LoRA adapters its backends serve (vLLM lists them as models).
  const servedModels = [o.servedModelName, ...(o.engine.loraModules ?? [])];
  refuseUnservedModels(o.policy.tenants, servedModels, o.policySource?.file);
  const clock = wallClock;
  const timers = wallTimers(clock);
  const log = o.log ?? SILENT_OPS_LOG;
  const tracer = o.tracer ?? NO_TRACING;
  const backends =
    o.backendUrls.length === 0
      ? (await o.embedded()).map(callingTools)
      : o.backendUrls.map(
          (url, i) =>
            new HttpBackend({
              name: `backend-${i}`,
              url: serverBaseUrl(url),
              clock,
              timers,
              scrapeIntervalMs: o.scrapeIntervalMs,
              apiKey: o.backendApiKey,
            }),
        );
  const metrics = new GatewayMetrics(o.policy.tenants.named.keys(), servedModels);
  metrics.state.storeUp.set(1);
  const shared = o.shared;
  const keptTtlMs = o.keptResponses?.ttlMs ?? RESPONSE_TTL_MS;
  const { store, memory } = await openSharedStore({
    redisUrl: shared?.redisUrl,
    failure: shared?.failure,
    replicas: shared?.replicas,
    clock,
    timers,
    newId: () => randomId(),
    responseTtlMs: keptTtlMs,
    responseCapacityBytes: o.keptResponses?.capacityBytes,
    onChange: (up, cause) => {
      metrics.state.storeUp.set(up ? 1 : 0);
      if (shared !== undefined) logStoreTransition(log, up, shared, cause);
    },
  });
  metrics.state.keptInMemory(() => memory.kept);
  // This process among the gateway replicas that share the store.
  const replica = randomId();
  const autoscale =
    o.autoscale === undefined || shared === undefined
      ? o.autoscale
      : {
          ...o.autoscale,
          peers: new PeerWindows({ store, replica, tickMs: o.autoscale.limits.tickMs, log }),
        };
  // Under a size rule, what images by URL take is learned from the backends' counts.
  const images =
    o.imageTokens !== undefined && o.imageTokens.rule !== 'fixed'
      ? new LearnedImageTokens(o.imageTokens)
      : undefined;
  if (images !== undefined) metrics.state.urlImageTokens(() => images.urlTokens);
  const prompts = o.policy.estimate.scalePrompts ? new PromptScale() : undefined;
  if (prompts !== undefined) metrics.state.promptScale(() => prompts.lines());
  // The newest 20,000 records for an hour, as JSON text in a byte ring off the heap: as objects
  // they were a large graph the collector walked again and again under load, as strings each
  // was copied out of the young generation; the lookup serves the text as is.
  const decisions = new TextRing(20_000, 24 * 1024 * 1024, 3_600_000);
  // Each request's end, beside its decision: a fifth of a decision record's bytes.
  const outcomes = new TextRing(20_000, 6 * 1024 * 1024, 3_600_000);
  const dashboard = new DashboardFeed(clock, { policy: o.policy.name, model: servedModels[0] });
  const gateway = new Gateway({
    learners: { urlImages: images, prompts },
    policy: o.policy,
    spec: fleetSpecFor(o.engine, o.profile, o.servedModelName),
    backends,
    clock,
    timers,
    metrics,
    log,
    onDecision: (r) => {
      const json = JSON.stringify(r);
      decisions.set(r.request_id, json, clock.now());
      dashboard.decision(r);
      o.onDecision?.(r, json);
    },
    onCompleted: (outcome, atMs, good) => dashboard.completed(outcome, atMs, good),
    onOutcome: (r) => {
      const json = JSON.stringify(r);
      outcomes.set(r.request_id, json, clock.now());
      dashboard.ended(r);
      o.onOutcome?.(r, json);
    },
    onScaleTick: (groups) => dashboard.scaleTick(groups),
    ...(o.engine.schedulingPolicy === 'priority'
      ? { priorityOf: (cls: SloClassName) => o.policy.classes[cls].priority }
      : {}),
    autoscale,
  });
  const learned =
    o.learnedState === undefined
      ? undefined
      : new LearnedPersistence(o.learnedState.store, gateway.pipeline.learned, {
          intervalMs: o.learnedState.intervalMs,
          clock,
          timers,
          epochMs,
          log,
          urlImages: images,
          promptScale: prompts,
          model: o.engine.model.name,
          onSave: (ok) => metrics.state.learnedSaves.inc({ result: ok ? 'ok' : 'error' }),
          onRestored: () => metrics.state.learnedRestored.set(1),
        });
  await learned?.restore();
  learned?.start();
  const inFlight = new InFlight();
  const shedder = new LagShedder(clock, timers, o.shedLagMs ?? o.policy.resilience.shedLagMs, {
    ratio: o.policy.resilience.shedGapRatio,
    tightestGapMs: () => gateway.pipeline.dispatcher.ledger.tightestItl(),
  });
  // New connections are let in at the pace the loop keeps: within the shed line, and within the
  // gap guard's share of the tightest running stream's objective (http/connection-intake.ts).
  const shedLagMs = shedder.thresholdMs;
  const gapRatio = o.policy.resilience.shedGapRatio;
  const intake =
    shedLagMs > 0
      ? new ConnectionIntake(clock, timers, () =>
          Math.min(shedLagMs, gapRatio * gateway.pipeline.dispatcher.ledger.tightestItl()),
        )
      : undefined;
  const lineMs = lineLimitMs(
    Math.min(...Object.values(o.policy.classes).map((c) => c.objectives.ttftMs ?? Infinity)),
  );
  metrics.httpGauges(
    () => inFlight.size,
    () => shedder.lagMs / 1000,
    () => intake?.waiting ?? 0,
  );
  const source = o.policySource ?? { policy: o.policy, doc: {}, file: undefined };
  const reloading = { pipeline: gateway.pipeline, metrics, log, epochMs };
  const policy = new PolicyReloader(source, {
    ...reloading,
    servedModels,
    onApplied: o.onPolicyApplied,
  });
  // Background responses: with a store shared by replicas, a cancel may reach another one, and
  // one replica finds what another, gone, left running. This process's runs name it so.
  const keeping = {
    store,
    keepResponses: keptTtlMs > 0,
    keptTtlMs,
    metrics,
    imageTokens: images ?? o.imageTokens,
    replica,
  };
  const background = new BackgroundRuns(keeping, { clock, timers }, shared !== undefined);
  const appDeps = {
    gateway,
    policyReload: policy,
    keys: apiKeys(o.policy),
    policy: o.policy,
    servedModels,
    nowMs: () => clock.now(),
    epochMs,
    timers,
    newId: () => randomId(),
    ...keeping,
    decisions,
    outcomes,
    adminToken: o.adminToken,
    dashboard: () => dashboard.doc(gateway.snapshots().length),
    inFlight,
    log,
    bodyLimitBytes: o.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
    shedding: () => shedder.shedding || (intake !== undefined && intake.lateMs > lineMs),
    tracer,
    fillerReplies: o.backendUrls.length === 0,
    promptScale: prompts,
    background,
    // Turns kept for retries: with a shared store, found on any replica.
    turns: new SharedTurns(
      shared === undefined ? undefined : store,
      replica,
      () => gateway.pipeline.learned.turns,
    ),
    // vLLM's /tokenize and /detokenize, outside admission, to the server backends in turn.
    forward:
      o.backendUrls.length === 0
        ? undefined
        : serverForwarder(o.backendUrls, backends, { clock, timers, apiKey: o.backendApiKey }),
  };
  const app = createGatewayApp(appDeps);
  warnOnOpenFileLimit(log);
  let listeners: Listeners | undefined;
  let status: Server | undefined;
  const refuseUnparsed = (code: number, reason: RejectReason) => {
    const requestId = randomId();
    gateway.refuseUnread({ requestId, tenant: null, cls: null, reason, status: code });
    return requestId;
  };
  try {
    listeners = await listen(nodeListener(app, { ...appDeps, intake }), o.host, o.port, {
      log,
      intake,
      refuseUnparsed,
    });
    if (o.statusPort !== undefined) {
      status = await listenStatus(app, o.host, o.statusPort, { log, refuse: refuseUnparsed });
    }
  } catch (e) {
    await listeners?.close();
    shedder.stop();
    await learned?.stop();
    await gateway.close();
    await store.close();
    await tracer.close();
    throw e;
  }
  // Listening, it takes the background responses other replicas hand over as they drain.
  background.adoptWith((order) => adopt(order, appDeps));
  const api = listeners;
  const { port } = api;
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  const stop = shutdownOf({
    api,
    status,
    intake,
    shedder,
    background,
    learned,
    gateway,
    pool: o.autoscale?.pool,
    store,
    tracer,
    inFlight,
    metrics,
    log,
    clock,
    timers,
  });
  return {
    url: `http://${host}:${port}`,
    ...(status === undefined ? {} : { statusUrl: `http://${host}:${portOf(status)}` }),
    app,
    gateway,
    policy,
    embedded: o.backendUrls.length === 0,
    ...stop,
  };
}

/** The default limit on a request body: 4 MiB (a 128K-token prompt is about 512 KB of text). */
export const DEFAULT_BODY_LIMIT_BYTES = 4 * 1024 * 1024;
