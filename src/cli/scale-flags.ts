/** The autoscaling limits `simulate` and `serve` share: the fewest and most groups, the ready time. */
import type { Command } from 'commander';
import { positiveInt } from './parse-flags.ts';

/** `minDefault`: what the minimum defaults to, in the command's own terms. */
export function addScaleLimitFlags(cmd: Command, minDefault: string): Command {
  return cmd
    .option(
      '--min-replicas <n>',
      `autoscaling: the fewest groups (default: ${minDefault})`,
      positiveInt('--min-replicas'),
    )
    .option(
      '--max-replicas <n>',
      'autoscaling: the most groups (default 4 × the minimum)',
      positiveInt('--max-replicas'),
    )
    .option(
      '--ready-time <s>',
      "autoscaling: a new group's ready time in seconds, MIN-MAX drawn per group — the controller's look-ahead",
      '120-240',
    );
}
