/**
 * Assembles a running gateway: the policy, the fleet facts its predictions use (from the named
 * model and GPU profile), the backends (OpenAI-compatible URLs, or an embedded simulated fleet
 * when none are given), the shared state (in memory, or Redis for several replicas), the Hono
 * app, and a listening Node server. Returns the URL and a `close` that stops everything it
 * started.
 */
import type { AddressInfo } from 'node:net';
import { serve as listen, type ServerType } from '@hono/node-server';
import type { ResolvedPolicy } from '../core/config/policy.ts';
import type { FleetSpec } from '../core/estimate/fleet-spec.ts';
import type { DecisionRecord } from '../core/observe/decision-record.ts';
import type { EngineConfig } from '../engine/engine-types.ts';
import { kvBytesPerToken } from '../engine/hardware.ts';
import { resolveGpuBlocks } from '../engine/kv-capacity.ts';
import type { TimingProfile } from '../engine/timing/profile.ts';
import { randomId } from '../runtime/entropy-rng.ts';
import { epochMs, wallClock } from '../runtime/wall-clock.ts';
import { wallTimers } from '../runtime/wall-timers.ts';
import { apiKeys } from './api-keys.ts';
import type { Backend } from './backend.ts';
import { BoundedMap } from './bounded-map.ts';
import { Gateway } from './gateway.ts';
import { GatewayMetrics } from './gateway-metrics.ts';
import { HttpBackend } from './http-backend.ts';
import { createGatewayApp, type GatewayEnv } from './http/app.ts';
import type { Hono } from 'hono';
import type { FailurePolicy } from './shared/failover-store.ts';
import { openSharedStore } from './shared/open-store.ts';

export interface ServeOptions {
  readonly policy: ResolvedPolicy;
  /** The engine the backends run (or are assumed to run): limits, KV and timing predictions. */
  readonly engine: EngineConfig;
  readonly profile: TimingProfile;
  readonly servedModelName: string;
  /** OpenAI-compatible base URLs; empty: `embedded()` provides the fleet. */
  readonly backendUrls: readonly string[];
  readonly embedded: () => Backend[];
  readonly host: string;
  readonly port: number;
  readonly adminToken?: string;
  readonly onDecision?: (record: DecisionRecord) => void;
  readonly scrapeIntervalMs?: number;
  /** State shared with other gateway replicas; absent: in memory. */
  readonly shared?: SharedStateSettings;
}

export interface SharedStateSettings {
  /** `redis://host:port`. */
  readonly redisUrl: string;
  /** While Redis is unreachable: serve under local limits (`open`) or refuse (`closed`). */
  readonly failure: FailurePolicy;
  /** Gateway replicas sharing the quotas: the local limits are 1/replicas of each. */
  readonly replicas: number;
  /** Where the store's up/down transitions are told (one line each). */
  readonly log?: (line: string) => void;
}

export interface RunningGateway {
  readonly url: string;
  /** The HTTP surface itself, for in-process requests (`app.request`). */
  readonly app: Hono<GatewayEnv>;
  readonly gateway: Gateway;
  readonly embedded: boolean;
  close(): Promise<void>;
}

export function fleetSpecFor(
  engine: EngineConfig,
  profile: TimingProfile,
  model: string,
): FleetSpec {
  return {
    model,
    adapters: [],
    maxModelLen: engine.model.maxModelLen,
    maxBatchedTokens: engine.maxBatchedTokens,
    maxNumSeqs: engine.maxNumSeqs,
    kvBytesPerToken: kvBytesPerToken(engine.model),
    replicaKvTokens: resolveGpuBlocks(engine) * engine.blockSize,
    stepTime: profile,
  };
}

export async function startGateway(o: ServeOptions): Promise<RunningGateway> {
  const clock = wallClock;
  const timers = wallTimers(clock);
  const backends =
    o.backendUrls.length === 0
      ? o.embedded()
      : o.backendUrls.map(
          (url, i) =>
            new HttpBackend({
              name: `backend-${i}`,
              url: url.replace(/\/+$/, ''),
              clock,
              timers,
              scrapeIntervalMs: o.scrapeIntervalMs,
            }),
        );
  const metrics = new GatewayMetrics(o.policy.tenants.named.keys());
  metrics.sharedStoreUp.set(1);
  const shared = o.shared;
  const store = await openSharedStore({
    redisUrl: shared?.redisUrl,
    failure: shared?.failure,
    replicas: shared?.replicas,
    clock,
    timers,
    newId: () => randomId(),
    onChange: (up, cause) => {
      metrics.sharedStoreUp.set(up ? 1 : 0);
      shared?.log?.(storeTransition(up, shared, cause));
    },
  });
  const decisions = new BoundedMap<DecisionRecord>(20_000, 3_600_000);
  const gateway = new Gateway({
    policy: o.policy,
    spec: fleetSpecFor(o.engine, o.profile, o.servedModelName),
    backends,
    clock,
    timers,
    metrics,
    onDecision: (r) => {
      decisions.set(r.request_id, r, clock.now());
      o.onDecision?.(r);
    },
  });
  const app = createGatewayApp({
    gateway,
    keys: apiKeys(o.policy),
    policy: o.policy,
    servedModels: [o.servedModelName],
    nowMs: () => clock.now(),
    epochMs,
    timers,
    newId: () => randomId(),
    store,
    metrics,
    decisions,
    adminToken: o.adminToken,
  });
  const server: ServerType = await new Promise((resolve) => {
    const s = listen({ fetch: app.fetch, hostname: o.host, port: o.port }, () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  return {
    url: `http://${host}:${port}`,
    app,
    gateway,
    embedded: o.backendUrls.length === 0,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive clients would hold the server open; their requests are over or abandoned.
      (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      await closed;
      await gateway.close();
      await store.close();
    },
  };
}

function storeTransition(up: boolean, s: SharedStateSettings, cause?: string): string {
  if (up) return 'goodput serve: shared state store is up: quotas are shared again';
  const then =
    s.failure === 'open'
      ? `failing open: local limits (1/${s.replicas} of each quota)`
      : 'failing closed: requests that need shared state get 503';
  return `goodput serve: shared state store is down (${cause ?? 'unreachable'}): ${then}`;
}
