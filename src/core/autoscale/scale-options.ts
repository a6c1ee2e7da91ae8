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
  /** The multiple of forecast arrivals the groups are sized for; default `DEFAULT_HEADROOM`. */
  readonly headroom?: number;
  /** Seconds scale-in looks back over; default 300, as Kubernetes' HPA. */
  readonly scaleInWindowS?: number;
  /** A measured capacity envelope's file, in place of the model's rate. */
  readonly capacityEnvelope?: string;
}

/**
 * Groups sized for 1.5× the forecast arrivals: above the short-term swings of the Azure 2023
 * conversation trace (the busiest minute within 3 minutes runs at most 1.37× the 5 minutes
 * before it), not a burst beyond them — that is the operator's to plan (`--burst-headroom`).
 */
export const DEFAULT_HEADROOM = 1.5;

export interface ScaleOptions {
  readonly type: string;
  readonly minReplicas: number;
  readonly maxReplicas: number;
  readonly readyTime: ReadyTime;
  readonly headroom: number;
  readonly scaleInWindowMs: number;
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
  if (AUTOSCALERS[f.autoscaler].readsCapacity !== true) {
    refuseUnusedLimits(
      { headroom: f.headroom, capacityEnvelope: f.capacityEnvelope },
      `with --autoscaler ${f.autoscaler} (only an autoscaler that plans with a group's capacity reads it: goodput)`,
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
  const headroom = f.headroom ?? DEFAULT_HEADROOM;
  if (!(headroom >= 1))
    throw new ConfigError('--burst-headroom', 'a number of at least 1', headroom);
  const windowS = f.scaleInWindowS ?? 300;
  if (!(windowS >= 0 && Number.isFinite(windowS))) {
    throw new ConfigError('--scale-in-window', 'seconds, 0 or more', windowS);
  }
  return {
    type: f.autoscaler,
    minReplicas: min,
    maxReplicas: max,
    readyTime,
    headroom,
    scaleInWindowMs: windowS * 1000,
  };
}

/**
 * The limits only an autoscaler reads: given where none runs (`without` says why), each is
 * refused, naming its flag, rather than dropped in silence. `--ready-time` and
 * `--scale-in-window` have defaults, so cannot be told apart from unset; both are checked as read.
 */
export function refuseUnusedLimits(f: Omit<ScaleFlags, 'autoscaler'>, without: string): void {
  const limits: [flag: string, value: unknown][] = [
    ['--min-replicas', f.minReplicas],
    ['--max-replicas', f.maxReplicas],
    ['--burst-headroom', f.headroom],
    ['--capacity-envelope', f.capacityEnvelope],
  ];
  for (const [flag, value] of limits) {
    if (value !== undefined) throw new ConfigError(flag, `unset ${without}`, value);
  }
}
