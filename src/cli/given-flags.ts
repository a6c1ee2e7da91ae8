/**
 * Flags that mean nothing with the others given: refused, naming the first, rather than dropped
 * in silence — an operator who set one expected it to do something.
 */
import type { Command } from 'commander';
import { ConfigError } from '../core/errors.ts';

/** Each of `flags` (option key, flag) given on the command line is a ConfigError: `expected`. */
export function refuseGiven(
  cmd: Command,
  o: Record<string, unknown>,
  flags: readonly (readonly [key: string, flag: string])[],
  expected: string,
): void {
  for (const [key, flag] of flags) {
    if (cmd.getOptionValueSource(key) === 'cli') throw new ConfigError(flag, expected, o[key]);
  }
}

/** `serve`: Redis's failure flags without Redis. */
export function refuseStrayServeFlags(cmd: Command, o: Record<string, unknown>): void {
  if (o.redis !== undefined) return;
  const redisOnly = [
    ['gatewayReplicas', '--gateway-replicas'],
    ['redisFailure', '--redis-failure'],
  ] as const;
  refuseGiven(cmd, o, redisOnly, 'unset without --redis (gateways sharing Redis fail by it)');
}

/** `serve`: the embedded fleet's size, where backends or a pool serve instead. */
export function refuseFleetSize(cmd: Command, o: Record<string, unknown>, backends: boolean) {
  const instead = backends ? '--backend' : `--engine-pool ${o.enginePool as string}`;
  refuseGiven(
    cmd,
    o,
    [['replicas', '--replicas']],
    `unset with ${instead} (it sizes the embedded fleet)`,
  );
}
