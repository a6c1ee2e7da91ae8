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
import type { EnvelopeEngine } from '../core/autoscale/capacity-envelope.ts';
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
  /** The engine the gateway plans with: a capacity envelope must have been measured on it. */
  engine: EnvelopeEngine,
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
    engineArgs: poolEngineArgs(o),
    readyTime: s.readyTime,
    rng: new SeededRng(o.seed as number).fork('engine-pool'),
    maxDrainMs: (o.drainTimeout as number) * 1000,
    clock: wallClock,
    timers: wallTimers(wallClock),
    log,
  });
  return { type: s.type, limits, pool, ...envelope };
}

/** The engine flags the pool's engines share with what the gateway was told they run. */
function poolEngineArgs(o: Record<string, unknown>): string[] {
  const args: string[] = [];
  const pass: [string, string][] = [
    ['model', '--model'],
    ['gpu', '--gpu'],
    ['tp', '--tp'],
    ['engineVersion', '--engine-version'],
    ['maxModelLen', '--max-model-len'],
    ['maxNumSeqs', '--max-num-seqs'],
    ['maxNumBatchedTokens', '--max-num-batched-tokens'],
    ['maxBatchedTokens', '--max-num-batched-tokens'],
    ['servedModelName', '--served-model-name'],
    ['imageTokens', '--image-tokens'],
    ['maxBodyMib', '--max-body-mib'],
  ];
  for (const [key, flag] of pass) {
    const value = o[key];
    if (value === undefined) continue;
    args.push(
      flag,
      key === 'imageTokens' ? formatImageTokens(value as ImageTokens) : String(value),
    );
  }
  return args;
}
