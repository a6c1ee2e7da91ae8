/**
 * The autoscaling options a command line gives — which autoscaler, its limits, a new group's
 * ready time — checked and filled in, the same for the simulator and the gateway. Each bad value
 * is a ConfigError naming its flag.
 */
import { ConfigError } from '../errors.ts';
import { parseReadyTime, type ReadyTime } from '../fleet/replica-group.ts';
import { AUTOSCALERS } from './controllers.ts';

export interface ScaleFlags {
  readonly autoscaler: string;
  readonly minReplicas?: number;
  readonly maxReplicas?: number;
  /** Seconds, `120-240` or `180`; default 120-240. */
  readonly readyTime?: string;
}

export interface ScaleOptions {
  readonly type: string;
  readonly minReplicas: number;
  readonly maxReplicas: number;
  readonly readyTime: ReadyTime;
}

/** `fleet`: the groups there are when nothing says otherwise (the minimum's default). */
export function resolveScaleFlags(f: ScaleFlags, fleet: number): ScaleOptions {
  if (AUTOSCALERS[f.autoscaler] === undefined) {
    throw new ConfigError(
      '--autoscaler',
      `one of ${Object.keys(AUTOSCALERS).join(', ')}`,
      f.autoscaler,
    );
  }
  const min = f.minReplicas ?? fleet;
  const max = f.maxReplicas ?? 4 * min;
  if (max < min) throw new ConfigError('--max-replicas', `at least --min-replicas (${min})`, max);
  const readyTime = parseReadyTime(f.readyTime ?? '120-240');
  if (readyTime === undefined) {
    throw new ConfigError(
      '--ready-time',
      'seconds, MIN-MAX or one value (e.g. 120-240)',
      f.readyTime,
    );
  }
  return { type: f.autoscaler, minReplicas: min, maxReplicas: max, readyTime };
}
