/**
 * Which replicas serve which LoRA adapters, when not every replica loads every adapter (each
 * vLLM replica started with its own `--lora-modules`): adapter j of the list is served by `k`
 * of the `n` replicas, placed round-robin from replica j·k, so the adapters spread evenly and
 * each is on exactly k of them. A replica added later (autoscaling) serves what replica
 * `index mod n` does. The replicas' snapshots carry the list (`servable`), and the core routes
 * and admits by it as it does a live backend's `/v1/models`.
 */
import { ConfigError } from '../errors.ts';

export function adapterPlacement(
  adapters: readonly string[],
  n: number,
  k: number,
): (replica: number) => readonly string[] {
  if (adapters.length === 0) {
    throw new ConfigError(
      '--adapter-replicas',
      'unset without adapters to place (serve: --lora-modules; simulate: --adapters)',
      k,
    );
  }
  if (!Number.isInteger(k) || k < 1 || k > n) {
    throw new ConfigError('--adapter-replicas', `an integer in [1, ${n}] (the replicas)`, k);
  }
  const served: string[][] = Array.from({ length: n }, () => []);
  adapters.forEach((name, j) => {
    for (let i = 0; i < k; i++) served[(j * k + i) % n].push(name);
  });
  return (replica) => served[replica % n];
}

/**
 * Each replica's engine configuration: `config` itself, or with `adapterReplicas`, `config`
 * loading only the replica's share of its adapters.
 */
export function replicaConfigs<C extends { readonly loraModules?: readonly string[] }>(
  config: C,
  replicas: number,
  adapterReplicas: number | undefined,
): (replica: number) => C {
  if (adapterReplicas === undefined) return () => config;
  const placed = adapterPlacement(config.loraModules ?? [], replicas, adapterReplicas);
  return (replica) => ({ ...config, loraModules: placed(replica) });
}
