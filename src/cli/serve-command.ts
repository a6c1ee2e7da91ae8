/**
 * `goodput serve`: the gateway. With `--backend URL` (repeatable) it fronts OpenAI-compatible
 * servers; with none it starts an embedded simulated fleet (`--replicas`), so it serves on a
 * fresh machine with nothing else. Engine flags name what the backends run — the gateway's
 * predictions (prefill, decode, KV) come from that profile. Without a policy file it binds
 * where told (127.0.0.1 by default) and takes requests without a key as tenant `default`, and
 * says so; a policy file with API keys makes keys required. Several replicas behind a load
 * balancer share quotas, retry budgets and idempotency keys through `--redis`. SIGTERM (or
 * SIGINT) drains it: not ready at once, requests in flight finish within `--drain-timeout`,
 * the decision log is flushed, exit 0; a second signal cuts what is left at once. SIGHUP (or
 * `POST /admin/policy/reload`) reloads the policy file's tenants: keys, weights, quotas.
 * `--learned-state` keeps what it learned (output lengths, prompt scale) for the next start. Operational
 * lines are JSON on stdout; with `--otlp-endpoint`, each request's trace goes to a collector.
 */
import { addScaleLimitFlags } from './scale-flags.ts';
import { serveAutoscale } from './serve-autoscale.ts';
import { availableParallelism } from 'node:os';
import { Command } from 'commander';
import { buildEngineConfig, buildEngineProfile, plannedProfile } from '../engine/engine-spec.ts';
import { adapterPlacement } from '../core/fleet/adapter-placement.ts';
import { ConfigError } from '../core/errors.ts';
import { openDecisionLog, type DecisionLog } from '../gateway/decision-log.ts';
import { EmbeddedBackend } from '../gateway/embedded-backend.ts';
import { ThreadedFleet } from '../gateway/threaded-fleet.ts';
import { simulatedFleet } from '../engine-server/simulated-fleet.ts';
import { wallTimers } from '../runtime/wall-timers.ts';
import { stdoutOpsLog, type OpsLog } from '../gateway/ops-log.ts';
import { serverBaseUrl } from '../openai/server-url.ts';
import { startGateway, type RunningGateway } from '../gateway/serve.ts';
import { openLearnedStore } from '../gateway/learned-state-store.ts';
import { epochMs, wallClock } from '../runtime/wall-clock.ts';
import { randomHex } from '../runtime/entropy-rng.ts';
import { otlpEndpoint } from '../gateway/tracing/otlp-endpoint.ts';
import { otlpTracer } from '../gateway/tracing/otlp-tracer.ts';
import type { RequestTracer } from '../gateway/tracing/request-trace.ts';
import { readPolicy } from '../sim/policy-source.ts';
import {
  addEngineFlags,
  engineSpecFromFlags,
  imageTokensOption,
  maxBodyOption,
  mebibytes,
} from './engine-flags.ts';
import {
  listenHost,
  nonEmpty,
  nonNegativeInt,
  nonNegativeNumber,
  oneOf,
  portNumber,
  redisUrl,
  positiveInt,
  positiveNumber,
  replicaCount,
  nonEmptyAs,
} from './parse-flags.ts';
import type { ImageTokens } from '../openai/image-size.ts';
import { logStarted } from './serve-started.ts';
import { refuseFleetSize, refuseStrayServeFlags } from './given-flags.ts';

const KEYS_HELP = `
API keys: clients send them as \`Authorization: Bearer <key>\`. A policy file (--policy) lists,
per tenant, the SHA-256 digests of its keys — tenants.<name>.api_keys_sha256, so the file holds
no secret; make a digest with \`printf %s "$KEY" | sha256sum\`. A policy with no keys takes
requests without one, as tenant \`default\`. Rotate keys and change tenants in the file under a
new policy_revision, then send SIGHUP (or POST /admin/policy/reload): they take effect without a
restart. The /admin endpoints need --admin-token (or $GOODPUT_ADMIN_TOKEN), sent the same way.`;

export function serveCommand(): Command {
  return addScaleLimitFlags(addEngineFlags(new Command('serve')), 'the backends, or --replicas')
    .description('run the gateway: OpenAI-compatible API in front of a fleet, under a policy')
    .addHelpText('after', KEYS_HELP)
    .option('--port <n>', 'port to listen on (0: any free port)', portNumber('--port'), 8080)
    .option('--host <host>', 'address to bind', listenHost('--host'), '127.0.0.1')
    .option(
      '--status-port <n>',
      "a second port answering only /healthz, /readyz, /health and /metrics, read at once however many connections wait on --port's (point probes and scrapes at it); default: none",
      portNumber('--status-port'),
    )
    .option(
      '--policy <name|file>',
      'preset name (goodput, baseline-vllm, least-request) or a YAML/JSON policy file (tenants, API key digests)',
      'goodput',
    )
    .option(
      '--backend <url>',
      'an OpenAI-compatible upstream base URL, http(s)://host:port[/v1] (repeatable); none: an embedded simulated fleet',
      (value: string, prev: string[] = []) => [...prev, value],
    )
    .option('--replicas <n>', 'embedded fleet size', replicaCount('--replicas'), 2)
    .option(
      '--adapter-replicas <k>',
      "embedded fleet: each of --lora-modules loaded on K of the replicas (round-robin), as replicas started with different --lora-modules (a --backend's own /v1/models says which it loads)",
      positiveInt('--adapter-replicas'),
    )
    .option(
      '--fleet-thread',
      "run the embedded fleet's engines on a thread of their own, so their steps keep a GPU's time however busy the gateway is (the default with 2 CPUs or more)",
    )
    .option(
      '--no-fleet-thread',
      "run the embedded fleet's engines on the gateway's event loop (the default on 1 CPU)",
    )
    .option(
      '--served-model-name <name>',
      'model name clients use (default: --model)',
      nonEmpty('--served-model-name'),
    )
    .addOption(imageTokensOption())
    .addOption(maxBodyOption())
    .option('--admin-token <token>', 'token for /admin endpoints (default: $GOODPUT_ADMIN_TOKEN)')
    .option(
      '--backend-api-key <key>',
      "the key the --backend servers require (vLLM's --api-key), sent to them as 'Authorization: Bearer KEY' (default: $GOODPUT_BACKEND_API_KEY)",
    )
    .option(
      '--decisions <file>',
      'append every decision record here, one JSON line each (pino: the record in its envelope, msg "decision"), and how each dispatched request ended (msg "outcome")',
    )
    .option('--seed <n>', 'seed of the embedded fleet', nonNegativeInt('--seed'), 0)
    .option(
      '--redis <url>',
      'share tenant quotas, retry budgets and idempotency keys with other gateways in Redis (redis://host:port; default: $GOODPUT_REDIS_URL, which keeps a password out of the process list)',
      redisUrl('--redis'),
    )
    .option(
      '--redis-failure <policy>',
      'while Redis is unreachable: open (serve under local limits) | closed (503 for requests that need it)',
      oneOf('--redis-failure', ['open', 'closed'] as const),
      'open',
    )
    .option(
      '--gateway-replicas <n>',
      'gateway replicas sharing the quotas: failing open, each enforces 1/n of every limit',
      positiveInt('--gateway-replicas'),
      1,
    )
    .option(
      '--responses-ttl <seconds>',
      "how long the Responses API's responses are kept for their next turn (previous_response_id) and for lookup (GET /v1/responses/{id}): in --redis, shared by every replica, else in memory; 0: none kept",
      nonNegativeNumber('--responses-ttl'),
      86_400,
    )
    .option(
      '--responses-memory <MiB>',
      'the most kept responses held in memory (without --redis, or while it is unreachable), the oldest forgotten first',
      positiveNumber('--responses-memory'),
      256,
    )
    .option(
      '--learned-state <file|redis>',
      'keep what the gateway learns (output lengths, prompt scale, what images by URL take) across restarts, in this file or (redis) in the --redis server, shared by every replica: restored at start, saved every --learned-state-interval and at shutdown; default: none, every start is cold',
      nonEmptyAs('--learned-state', 'a file, or redis'),
    )
    .option(
      '--learned-state-interval <seconds>',
      'how often the learned state is saved',
      positiveNumber('--learned-state-interval'),
      60,
    )
    .option(
      '--autoscaler <type>',
      'the autoscaler whose decision /metrics exports as goodput_desired_replicas: goodput | hpa-utilization | keda-queue | kpa-like | none',
      'goodput',
    )
    .option(
      '--engine-pool <kind>',
      'who acts on the decision: none (exported only) | local (starts and drains goodput engine processes on this machine, one per group, ready after --ready-time) | kubernetes (scales the --k8s-scale object, draining the replica it removes)',
      oneOf('--engine-pool', ['none', 'local', 'kubernetes']),
      'none',
    )
    .option(
      '--k8s-scale <path>',
      'the StatefulSet or LeaderWorkerSet whose replicas --engine-pool kubernetes sets, from the API root: apis/apps/v1/namespaces/NS/statefulsets/NAME',
    )
    .option(
      '--k8s-backend-url <template>',
      "replica {i}'s OpenAI-compatible URL, e.g. http://vllm-{i}.vllm.NS.svc:8000 (a headless Service's pod names)",
    )
    .option('--k8s-api <url>', "the API server (default: the pod's own cluster)")
    .option('--k8s-token-file <file>', "its bearer token (default: the pod's service account)")
    .option(
      '--k8s-lease <name>',
      "for several gateways on one --k8s-scale object: the Lease they elect the one that scales on ([NS/]NAME; NS: the object's namespace); the others follow its drains (default: none, this gateway alone acts)",
    )
    .option(
      '--otlp-endpoint <url>',
      "send each request's trace to an OpenTelemetry collector over OTLP/HTTP (JSON), e.g. http://collector:4318/v1/traces (no path: /v1/traces); default: none",
      (value: string) => otlpEndpoint(value),
    )
    .option(
      '--otlp-service-name <name>',
      'service.name of those traces',
      nonEmpty('--otlp-service-name'),
      'goodput',
    )
    .option(
      '--drain-timeout <seconds>',
      'on SIGTERM, how long requests in flight may run on before they are cut; with an --engine-pool, also how long a scale-in drain waits for its streams',
      nonNegativeNumber('--drain-timeout'),
      30,
    )
    .action(async (o: Record<string, unknown>, cmd: Command) => {
      // A URL with a password is kept out of the process list (and the pod spec) by the env.
      const envRedis = process.env.GOODPUT_REDIS_URL;
      if (o.redis === undefined && envRedis !== undefined && envRedis !== '') {
        o.redis = redisUrl('$GOODPUT_REDIS_URL')(envRedis);
      }
      refuseStrayServeFlags(cmd, o);
      const log = stdoutOpsLog();
      const loaded = readPolicy(o.policy as string);
      const { policy } = loaded;
      if (policy.routing.prefixMode === 'precise') {
        // Only the simulator's engines report their KV events to the control plane.
        throw new ConfigError(
          'routing.prefix.mode',
          'approximate (a gateway sees no KV events from its backends)',
          'precise',
        );
      }
      const spec = engineSpecFromFlags(o, policy.engine.version);
      const engine = buildEngineConfig(spec);
      // The gateway plans with the profile; the embedded engines run as the spec says (slowed).
      const profile = plannedProfile(spec);
      const model = (o.servedModelName as string | undefined) ?? spec.model;
      const given = ((o.backend as string[] | undefined) ?? []).map((u) => serverBaseUrl(u));
      const decisions = o.decisions === undefined ? null : decisionLogAt(o.decisions as string);
      const pooled = o.enginePool !== 'none';
      if (given.length > 0 || pooled) refuseFleetSize(cmd, o, given.length > 0);
      const serving = given.length > 0 ? given.length : pooled ? 1 : (o.replicas as number);
      const autoscale = await serveAutoscale(o, serving, log, spec);
      const pool = autoscale?.pool;
      if (pool !== undefined && given.length > 0) {
        const kind = o.enginePool as string;
        throw new ConfigError('--engine-pool', 'none with --backend (a pool has its own)', kind);
      }
      // A pool's URLs as a --backend's are taken: an OpenAI-style base's /v1 is its root.
      const urls = pool === undefined ? given : pool.urls.map((u) => serverBaseUrl(u));
      const imageTokens = o.imageTokens as ImageTokens | undefined;
      const adapterReplicas = o.adapterReplicas as number | undefined;
      if (adapterReplicas !== undefined && urls.length > 0) {
        throw new ConfigError(
          '--adapter-replicas',
          "unset with backends (each backend's /v1/models says which adapters it loads)",
          adapterReplicas,
        );
      }
      // Checked here, before the fleet (on its thread or not) places them.
      if (adapterReplicas !== undefined) {
        adapterPlacement(engine.loraModules ?? [], o.replicas as number, adapterReplicas);
      }
      const running = await startGateway({
        policy,
        policySource: loaded,
        engine,
        profile,
        servedModelName: model,
        backendUrls: urls,
        embedded: async () => {
          const fleet = { replicas: o.replicas as number, seed: o.seed as number, adapterReplicas };
          // A simulated GPU does not share the gateway's CPU: stepping on its loop, the engines
          // run late whenever relaying their tokens keeps it busy, and every stream's gaps grow.
          if ((o.fleetThread as boolean | undefined) ?? availableParallelism() >= 2) {
            const threaded = await ThreadedFleet.start(
              { spec, ...fleet },
              engine,
              wallClock,
              imageTokens,
            );
            return threaded.backends;
          }
          const timers = wallTimers(wallClock);
          return simulatedFleet({
            config: engine,
            profile: buildEngineProfile(spec),
            clock: wallClock,
            timers,
            ...fleet,
          }).map((sim, i) => new EmbeddedBackend(`embedded-${i}`, sim, wallClock, imageTokens));
        },
        imageTokens,
        bodyLimitBytes: mebibytes(o.maxBodyMib as number),
        host: o.host as string,
        port: o.port as number,
        statusPort: o.statusPort as number | undefined,
        adminToken: (o.adminToken as string | undefined) ?? process.env.GOODPUT_ADMIN_TOKEN,
        backendApiKey: backendApiKey(o, urls),
        shared:
          o.redis === undefined
            ? undefined
            : {
                redisUrl: o.redis as string,
                failure: o.redisFailure as 'open' | 'closed',
                replicas: o.gatewayReplicas as number,
              },
        onDecision: decisions === null ? undefined : (_, json) => decisions.write(json),
        onOutcome: decisions === null ? undefined : (_, json) => decisions.write(json, 'outcome'),
        onPolicyApplied:
          decisions === null ? undefined : (j) => decisions.write(j, 'policy_reload'),
        log,
        autoscale,
        tracer: serveTracer(o, log),
        keptResponses: {
          ttlMs: (o.responsesTtl as number) * 1000,
          capacityBytes: (o.responsesMemory as number) * 1024 * 1024,
        },
        learnedState:
          o.learnedState === undefined
            ? undefined
            : {
                store: await openLearnedStore(
                  o.learnedState as string,
                  o.redis as string | undefined,
                  wallClock,
                  wallTimers(wallClock),
                ),
                intervalMs: (o.learnedStateInterval as number) * 1000,
              },
      });
      logStarted(log, running, { o, policy, spec, urls, pool, imageTokens, model });
      onSignals(running, (o.drainTimeout as number) * 1000, decisions, log);
    });
}

/** Request traces to the collector `--otlp-endpoint` names; none without it. */
function serveTracer(o: Record<string, unknown>, log: OpsLog): RequestTracer | undefined {
  if (o.otlpEndpoint === undefined) return undefined;
  const endpoint = o.otlpEndpoint as string;
  const serviceName = o.otlpServiceName as string;
  log.info({ endpoint, service_name: serviceName }, `request traces to ${endpoint}`);
  return otlpTracer({ endpoint, serviceName, clock: wallClock, epochMs, randomHex, log });
}

/**
 * The first SIGTERM/SIGINT drains, then exits 0; a second cuts what is still running. SIGHUP
 * reloads the policy file.
 */
function onSignals(
  running: RunningGateway,
  drainMs: number,
  decisions: DecisionLog | null,
  log: OpsLog,
): void {
  let draining = false;
  const stop = (signal: NodeJS.Signals) => {
    if (draining) {
      log.warn({ signal }, 'second signal: cutting what is still running');
      running.cutNow();
      return;
    }
    draining = true;
    log.info({ signal, drain_timeout_ms: drainMs }, 'shutting down');
    // Whatever fails on the way out, the decision log is closed and the exit says so.
    let code = 0;
    void running
      .drain(drainMs)
      .catch((e: unknown) => {
        code = 1;
        log.error({ err: e }, 'shutdown failed');
      })
      .then(() => decisions?.close())
      .then(() => {
        log.info({ exit_code: code }, 'stopped');
        process.exit(code);
      });
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  // A hangup reloads the policy file, as daemons do; it never stops the gateway.
  process.on('SIGHUP', () => {
    running.policy.reload('signal').catch((e: unknown) => log.error({ err: e }, 'policy reload'));
  });
}

/** The decision log at `path`; a path it cannot append to is a configuration error. */
function decisionLogAt(path: string): DecisionLog {
  try {
    return openDecisionLog(
      path,
      (e) =>
        console.error(`goodput serve: decision log ${path}: ${e.message}; no more lines go there`),
      epochMs,
    );
  } catch (e) {
    throw new ConfigError('--decisions', `a file it can append to (${(e as Error).message})`, path);
  }
}

/** The key for the --backend servers: the flag's, or the environment's; the flag needs servers. */
function backendApiKey(o: Record<string, unknown>, urls: readonly string[]): string | undefined {
  const flag = o.backendApiKey as string | undefined;
  if (flag !== undefined && urls.length === 0) {
    throw new ConfigError('--backend-api-key', 'a --backend to send it to', 'none');
  }
  const key = flag ?? process.env.GOODPUT_BACKEND_API_KEY;
  return key === '' ? undefined : key;
}
