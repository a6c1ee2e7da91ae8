/**
 * `serve`'s autoscaler, from its flags: the decision `/metrics` exports, checked (an autoscaler's
 * limits without one are refused), and the pool that acts on it when asked for: local engine
 * processes, or a Kubernetes object's replicas (serve-kube.ts).
 */
import { refuseUnusedLimits, resolveScaleFlags } from '../core/autoscale/scale-options.ts';
import { ConfigError } from '../core/errors.ts';
import { LocalEnginePool } from '../gateway/local-pool.ts';
import type { OpsLog } from '../gateway/ops-log.ts';
import type { ScaleExportSettings, ScalePool } from '../gateway/scale-export.ts';
import { kubePool, refuseStrayKubeFlags } from './serve-kube.ts';
import { SeededRng } from '../runtime/seeded-rng.ts';
import { wallClock } from '../runtime/wall-clock.ts';
import { wallTimers } from '../runtime/wall-timers.ts';
import { loadEnvelope } from '../sim/envelope-file.ts';
import type { EngineSpec } from '../engine/engine-spec.ts';
import { engineSpecArgs } from './engine-flags.ts';
import { formatImageTokens, type ImageTokens } from '../openai/image-size.ts';

/** A pool that acts on the decision, and the backend URL of each of its slots. */
export type ServingPool = ScalePool & { readonly urls: readonly string[] };

/** How often the gateway's autoscaler decides. */
const SCALE_TICK_MS = 5_000;

/**
 * The autoscaler the serve flags ask for, checked, and the pool that acts on it when asked for;
 * `fleet`: the groups serving at start (the minimum's default).
 */
export async function serveAutoscale(
  o: Record<string, unknown>,
  fleet: number,
  log: OpsLog,
  /**
   * The engine the gateway plans with: a capacity envelope must have been measured on it, and
   * a local pool's engines run it.
   */
  engine: EngineSpec,
): Promise<(ScaleExportSettings & { readonly pool?: ServingPool }) | undefined> {
  const kind = o.enginePool as 'none' | 'local' | 'kubernetes';
  refuseStrayKubeFlags(o, kind);
  if (o.autoscaler === 'none') {
    if (kind !== 'none') {
      throw new ConfigError('--engine-pool', 'none when --autoscaler is none', kind);
    }
    refuseUnusedLimits(
      {
        minReplicas: o.minReplicas as number | undefined,
        maxReplicas: o.maxReplicas as number | undefined,
        headroom: o.burstHeadroom as number | undefined,
        capacityEnvelope: o.capacityEnvelope as string | undefined,
      },
      'with --autoscaler none',
    );
    return undefined;
  }
  const s = resolveScaleFlags(
    {
      autoscaler: o.autoscaler as string,
      minReplicas: o.minReplicas as number | undefined,
      maxReplicas: o.maxReplicas as number | undefined,
      readyTime: o.readyTime as string,
      headroom: o.burstHeadroom as number | undefined,
      scaleInWindowS: o.scaleInWindow as number,
      capacityEnvelope: o.capacityEnvelope as string | undefined,
    },
    fleet,
  );
  const limits = {
    minReplicas: s.minReplicas,
    maxReplicas: s.maxReplicas,
    readyTimeMs: (s.readyTime.minMs + s.readyTime.maxMs) / 2,
    tickMs: SCALE_TICK_MS,
    headroom: s.headroom,
    scaleInWindowMs: s.scaleInWindowMs,
  };
  const envelope =
    o.capacityEnvelope === undefined
      ? {}
      : { envelope: loadEnvelope(o.capacityEnvelope as string, engine) };
  if (kind === 'none') return { type: s.type, limits, ...envelope };
  if (kind === 'kubernetes') {
    const pool = await kubePool(o, s.maxReplicas, log);
    return { type: s.type, limits, pool, ...envelope };
  }
  const pool = await LocalEnginePool.open({
    slots: s.maxReplicas,
    command: [process.execPath, ...process.execArgv, process.argv[1], 'engine'],
    engineArgs: poolEngineArgs(o, engine),
    readyTime: s.readyTime,
    rng: new SeededRng(o.seed as number).fork('engine-pool'),
    maxDrainMs: (o.drainTimeout as number) * 1000,
    clock: wallClock,
    timers: wallTimers(wallClock),
    log,
  });
  return { type: s.type, limits, pool, ...envelope };
}

/**
 * The pool's engines run what the gateway plans with: its engine spec whole (the policy's
 * engine version included), the model name it serves, its image tokens and body limit.
 */
function poolEngineArgs(o: Record<string, unknown>, engine: EngineSpec): string[] {
  const args = engineSpecArgs(engine);
  if (o.servedModelName !== undefined) args.push('--served-model-name', String(o.servedModelName));
  if (o.imageTokens !== undefined) {
    args.push('--image-tokens', formatImageTokens(o.imageTokens as ImageTokens));
  }
  args.push('--max-body-mib', String(o.maxBodyMib));
  return args;
}
