/**
 * `goodput serve`: the gateway. With `--backend URL` (repeatable) it fronts OpenAI-compatible
 * servers; with none it starts an embedded simulated fleet (`--replicas`), so it serves on a
 * fresh machine with nothing else. Engine flags name what the backends run — the gateway's
 * predictions (prefill, decode, KV) come from that profile. Without a policy file it binds
 * where told (127.0.0.1 by default) and takes requests without a key as tenant `default`, and
 * says so; a policy file with API keys makes keys required. Several replicas behind a load
 * balancer share quotas, retry budgets and idempotency keys through `--redis`.
 */
import { Command } from 'commander';
import { buildEngineConfig, buildEngineProfile } from '../engine/engine-spec.ts';
import { shareGptSampler } from '../engine-server/engine-app.ts';
import { NO_FAULTS } from '../engine-server/request-plan.ts';
import { SimulatedBackend } from '../engine-server/simulated-backend.ts';
import { ConfigError } from '../core/errors.ts';
import { openDecisionLog, type DecisionLog } from '../gateway/decision-log.ts';
import { EmbeddedBackend } from '../gateway/embedded-backend.ts';
import { startGateway } from '../gateway/serve.ts';
import { SeededRng } from '../runtime/seeded-rng.ts';
import { wallClock } from '../runtime/wall-clock.ts';
import { wallTimers } from '../runtime/wall-timers.ts';
import { loadPolicy } from '../sim/policy-source.ts';
import { addEngineFlags, engineSpecFromFlags } from './engine-flags.ts';
import { nonNegativeInt, oneOf, positiveInt } from './parse-flags.ts';

export function serveCommand(): Command {
  return addEngineFlags(new Command('serve'))
    .description('run the gateway: OpenAI-compatible API in front of a fleet, under a policy')
    .option('--port <n>', 'port to listen on (0: any free port)', nonNegativeInt('--port'), 8080)
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option(
      '--policy <name|file>',
      'preset name (goodput, baseline-vllm, least-request) or a YAML/JSON policy file',
      'goodput',
    )
    .option(
      '--backend <url>',
      'an OpenAI-compatible upstream base URL (repeatable); none: an embedded simulated fleet',
      (value: string, prev: string[] = []) => [...prev, value],
    )
    .option('--replicas <n>', 'embedded fleet size', positiveInt('--replicas'), 2)
    .option('--served-model-name <name>', 'model name clients use (default: --model)')
    .option('--admin-token <token>', 'token for /admin endpoints (default: $GOODPUT_ADMIN_TOKEN)')
    .option(
      '--decisions <file>',
      'append every decision record here, one JSON line each (pino: the record in its envelope)',
    )
    .option('--seed <n>', 'seed of the embedded fleet', nonNegativeInt('--seed'), 0)
    .option(
      '--redis <url>',
      'share tenant quotas, retry budgets and idempotency keys with other gateways in Redis (redis://host:port)',
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
    .action(async (o: Record<string, unknown>) => {
      const spec = engineSpecFromFlags(o);
      const engine = buildEngineConfig(spec);
      const profile = buildEngineProfile(spec);
      const policy = loadPolicy(o.policy as string);
      const model = (o.servedModelName as string | undefined) ?? spec.model;
      const urls = (o.backend as string[] | undefined) ?? [];
      const rng = new SeededRng(o.seed as number);
      const timers = wallTimers(wallClock);
      const decisions = o.decisions === undefined ? null : decisionLogAt(o.decisions as string);
      const running = await startGateway({
        policy,
        engine,
        profile,
        servedModelName: model,
        backendUrls: urls,
        embedded: () =>
          Array.from({ length: o.replicas as number }, (_, i) => {
            const sim = new SimulatedBackend({
              config: engine,
              profile,
              clock: wallClock,
              timers,
              rng: rng.fork(`replica-${i}`),
              faults: NO_FAULTS,
              lengths: shareGptSampler(),
            });
            return new EmbeddedBackend(`embedded-${i}`, sim, wallClock);
          }),
        host: o.host as string,
        port: o.port as number,
        adminToken: (o.adminToken as string | undefined) ?? process.env.GOODPUT_ADMIN_TOKEN,
        shared:
          o.redis === undefined
            ? undefined
            : {
                redisUrl: o.redis as string,
                failure: o.redisFailure as 'open' | 'closed',
                replicas: o.gatewayReplicas as number,
                log: (line) => console.log(line),
              },
        onDecision: decisions === null ? undefined : (r) => decisions.write(r),
      });
      const fleet = running.embedded
        ? `an embedded simulated fleet of ${o.replicas as number} × ${spec.model}/${spec.gpu}`
        : `${urls.length} backend(s)`;
      console.log(`goodput serve: policy ${policy.revision}, ${fleet}`);
      if (
        policy.tenants.named.size === 0 ||
        [...policy.tenants.named.values()].every((t) => t.apiKeySha256.length === 0)
      ) {
        console.log(
          'goodput serve: no API keys configured — requests need no key and count as tenant `default`',
        );
      }
      if (o.redis !== undefined) {
        console.log(
          `goodput serve: shared state in Redis (fails ${o.redisFailure as string}, ${o.gatewayReplicas as number} replica(s))`,
        );
      }
      console.log(`goodput serve: OpenAI API at ${running.url}/v1 (model "${model}")`);
      const stop = () => {
        void running
          .close()
          .then(() => decisions?.close())
          .then(() => process.exit(0));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
}

/** The decision log at `path`; a path it cannot append to is a configuration error. */
function decisionLogAt(path: string): DecisionLog {
  try {
    return openDecisionLog(path, (e) =>
      console.error(`goodput serve: decision log ${path}: ${e.message}; no more lines go there`),
    );
  } catch (e) {
    throw new ConfigError('--decisions', `a file it can append to (${(e as Error).message})`, path);
  }
}
