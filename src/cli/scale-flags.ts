/**
 * The autoscaling limits `simulate` and `serve` share: the fewest and most groups, the ready time,
 * the headroom.
 */
import type { Command } from 'commander';
import { DEFAULT_HEADROOM } from '../core/autoscale/scale-options.ts';
import { ConfigError } from '../core/errors.ts';
import { parseReadyTime } from '../core/fleet/replica-group.ts';
import { nonNegativeNumber, positiveNumber, replicaCount } from './parse-flags.ts';

/** `minDefault`: what the minimum defaults to, in the command's own terms. */
export function addScaleLimitFlags(cmd: Command, minDefault: string): Command {
  return cmd
    .option(
      '--min-replicas <n>',
      `autoscaling: the fewest groups (default: ${minDefault})`,
      replicaCount('--min-replicas'),
    )
    .option(
      '--max-replicas <n>',
      'autoscaling: the most groups (default 4 × the minimum)',
      replicaCount('--max-replicas'),
    )
    .option(
      '--ready-time <s>',
      "autoscaling: a new group's ready time in seconds, MIN-MAX drawn per group — the controller's look-ahead",
      readyTimeFlag,
      '120-240',
    )
    .option(
      '--burst-headroom <x>',
      `autoscaling (goodput): size the groups for this multiple of the forecast arrivals — a burst up to it is served while new groups start (default ${DEFAULT_HEADROOM})`,
      positiveNumber('--burst-headroom'),
    )
    .option(
      '--capacity-envelope <file>',
      "autoscaling (goodput): one group's capacity as goodput capacity --out measured it, in place of the step-time model's (still corrected online)",
    )
    .option(
      '--scale-in-window <s>',
      'autoscaling: scale in no lower than the highest recommendation of this many seconds',
      nonNegativeNumber('--scale-in-window'),
      300,
    );
}

/** Checked as it is read, whether or not an autoscaler is on to use it. */
function readyTimeFlag(value: string): string {
  if (parseReadyTime(value) === undefined) {
    throw new ConfigError('--ready-time', 'seconds, MIN-MAX or one value (e.g. 120-240)', value);
  }
  return value;
}
