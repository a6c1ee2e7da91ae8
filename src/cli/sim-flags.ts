/**
 * The flags `simulate` and `compare` share, and their translation into a ScenarioSpec. Every
 * flag is documented in `--help`; every numeric one is validated as it is parsed.
 */
import { Option, type Command } from 'commander';
import { addEngineFlags, engineSpecFromFlags } from './engine-flags.ts';
import { addScaleLimitFlags } from './scale-flags.ts';
import { SCENARIO_DEFAULTS as D, type ScenarioSpec } from '../sim/scenario.ts';
import { RETRY_MODES, type RetryMode } from '../sim/client-behaviour.ts';
import {
  nonNegativeNumber,
  positiveInt,
  numberAtLeast,
  positiveNumber,
  repeated,
  secondsWindow,
  groupRange,
  replicaCount,
} from './parse-flags.ts';
import { addWorkloadFlags, workloadFromFlags } from './workload-flags.ts';
import { DEFAULT_KV_LINK, MIN_KV_LINK_GBPS } from '../engine/kv-transfer.ts';

export function addScenarioFlags(cmd: Command): Command {
  return addWorkloadFlags(addScaleLimitFlags(addEngineFlags(cmd), '--replicas'))
    .option(
      '--tool-calls <spec>',
      'agents: each request pauses N times for a tool call, N:WAIT_MS:RESULT_TOKENS (exponential waits of that mean; native traces carry tool_calls per row)',
    )
    .option(
      '--prefix <mix>',
      'a prefix-heavy workload for routing: multi-turn chat sessions resending their history, hot shared prefixes, long documents and a hot agent preamble, mixed `mix` or chat:W,hot:W,docs:W,agent:W (prompts from that structure; --input unused)',
    )
    .option(
      '--adapters <spec>',
      'LoRA adapters the requests ask for, zipf:N:S (lora-0 … lora-N-1); the replicas serve them unless --lora-modules says otherwise',
    )
    .option(
      '--adapter-replicas <k>',
      'each LoRA adapter is loaded on K of the replicas (placed round-robin), as replicas started with different --lora-modules; requests for it are routed and admitted over those K (default: every replica serves every adapter)',
      positiveInt('--adapter-replicas'),
    )
    .option('--replicas <n>', 'replicas in the fleet', replicaCount('--replicas'), D.replicas)
    .option(
      '--prefill-replicas <n>',
      "disaggregated serving: a pool of N prefill replicas computes each prompt, whose KV then crosses --kv-link-gbps to the request's replica (--replicas: the decode pool), as vLLM's disaggregated prefill, llm-d's P/D and Dynamo run it; MIN-MAX with --autoscaler scales the pool on its own signals",
      groupRange('--prefill-replicas'),
    )
    .option(
      '--kv-link-gbps <gbps>',
      `with --prefill-replicas: the link a prompt's KV crosses, gigabits per second per GPU (default ${DEFAULT_KV_LINK.gbps}: one RDMA NIC per GPU), plus ${DEFAULT_KV_LINK.setupMs} ms a transfer`,
      numberAtLeast('--kv-link-gbps', MIN_KV_LINK_GBPS),
    )
    .option(
      '--autoscaler <type>',
      'scale the fleet: goodput | hpa-utilization | keda-queue | kpa-like | none (starts at --min-replicas)',
    )

    .option(
      '--prefix-reset <seconds>',
      'at this time every ready replica drops its cached prefixes, as a rolling restart or weight update does (repeatable)',
      repeated(nonNegativeNumber('--prefix-reset')),
    )
    .option(
      '--canary <from-to>',
      "a rollout's canary holds one group's GPUs outside the pool from FROM to TO seconds: GPU-seconds count them and the autoscaler's ceiling is one lower (repeatable)",
      repeated((v: string) => secondsWindow('--canary', v)),
    )
    .option(
      '--scale-freeze <from-to>',
      'autoscaling: an operator freeze, seconds FROM-TO of simulated time in which no scaling decision is taken (repeatable)',
      repeated((v: string) => secondsWindow('--scale-freeze', v)),
    )
    .option(
      '--scenario <shape>',
      'load shape: diurnal-burst (arrivals re-timed: a diurnal ramp 0.5×–1.5× over the run, ×3 for 10 minutes from 45%)',
    )
    .option(
      '--fail-group <seconds>',
      'at this time the busiest ready group fails: requests not yet streaming move elsewhere, streams under way end (repeatable)',
      repeated(nonNegativeNumber('--fail-group')),
    )
    .option(
      '--client-timeout-ms <ms>',
      'clients cancel an attempt not finished after this long',
      positiveNumber('--client-timeout-ms'),
    )
    .addOption(
      new Option(
        '--retry-mode <mode>',
        'disciplined: backoff with full jitter ≥ Retry-After, one idempotency key, no retry after tokens; ' +
          'naive: retry at once as a new request, even after tokens',
      )
        .choices(RETRY_MODES)
        .default(D.retryMode),
    )
    .option(
      '--max-attempts <n>',
      'attempts per request, the first included (1 = no retries)',
      positiveInt('--max-attempts'),
      D.maxAttempts,
    )
    .option(
      '--backoff-base-ms <ms>',
      'retry backoff base (exponential, full jitter)',
      nonNegativeNumber('--backoff-base-ms'),
      D.backoffBaseMs,
    )
    .option(
      '--backoff-cap-ms <ms>',
      'retry backoff cap',
      nonNegativeNumber('--backoff-cap-ms'),
      D.backoffCapMs,
    )
    .option('--out <file>', 'write the JSON report here');
}

/** Commander's parsed options → ScenarioSpec; `policyVersion` as in `engineSpecFromFlags`. */
export function scenarioFromFlags(
  o: Record<string, unknown>,
  policyVersion?: string,
): ScenarioSpec {
  return {
    ...engineSpecFromFlags(o, policyVersion),
    seed: o.seed as number,
    ...workloadFromFlags(o),
    toolCalls: o.toolCalls as string | undefined,
    prefix: o.prefix as string | undefined,
    adapters: o.adapters as string | undefined,
    adapterReplicas: o.adapterReplicas as number | undefined,
    autoscaler: o.autoscaler as string | undefined,
    minReplicas: o.minReplicas as number | undefined,
    maxReplicas: o.maxReplicas as number | undefined,
    readyTime: o.readyTime as string | undefined,
    headroom: o.burstHeadroom as number | undefined,
    capacityEnvelope: o.capacityEnvelope as string | undefined,
    scaleFreezes: o.scaleFreeze as { fromS: number; toS: number }[] | undefined,
    prefixResetAtS: o.prefixReset as number[] | undefined,
    canaries: o.canary as { fromS: number; toS: number }[] | undefined,
    scaleInWindowS: o.scaleInWindow as number | undefined,
    scenario: o.scenario as string | undefined,
    failGroupAtS: o.failGroup as number[] | undefined,
    replicas: o.replicas as number,
    ...prefillRange(o.prefillReplicas as { min: number; max: number } | undefined),
    kvLinkGbps: o.kvLinkGbps as number | undefined,
    clientTimeoutMs: o.clientTimeoutMs as number | undefined,
    maxAttempts: o.maxAttempts as number,
    retryMode: o.retryMode as RetryMode,
    backoffBaseMs: o.backoffBaseMs as number,
    backoffCapMs: o.backoffCapMs as number,
  };
}

function prefillRange(r: { min: number; max: number } | undefined) {
  return r === undefined ? {} : { prefillReplicas: r.min, prefillMaxReplicas: r.max };
}
