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
  nonNegativeInt,
  nonNegativeNumber,
  positiveInt,
  positiveNumber,
  positiveRate,
} from './parse-flags.ts';
import { LENGTH_TABLE_NAMES, LENGTH_TABLES } from '../sim/workload/sharegpt-lengths.ts';

const LENGTH_SPECS = [
  'fixed:N | uniform:A:B | exp:MEAN',
  ...LENGTH_TABLE_NAMES.map((name) => `${name} (${LENGTH_TABLES[name].about})`),
].join(' | ');

export function addScenarioFlags(cmd: Command): Command {
  return addScaleLimitFlags(addEngineFlags(cmd), '--replicas')
    .option(
      '--trace <file>',
      'replay a trace: Azure 2023 CSV, Mooncake JSONL, BurstGPT CSV or native JSONL',
    )
    .option(
      '--trace-format <format>',
      'azure | mooncake | burstgpt | jsonl (default: detected from content)',
    )
    .addOption(
      new Option(
        '--arrival <process>',
        'synthetic arrivals (default: poisson, or gamma when --burstiness is not 1); gamma with --trace re-times the trace at its own mean rate',
      ).choices(['poisson', 'gamma']),
    )
    .option(
      '--rate <rps>',
      'synthetic arrival rate, requests/s, or inf: every request at once',
      positiveRate('--rate'),
      D.rate,
    )
    .option(
      '--burstiness <b>',
      'gamma shape (vLLM --burstiness): 1 = Poisson, < 1 burstier',
      positiveNumber('--burstiness'),
      D.burstiness,
    )
    .option(
      '--num-requests <n>',
      'synthetic requests to generate',
      positiveInt('--num-requests'),
      D.numRequests,
    )
    .option('--input <spec>', `input lengths: ${LENGTH_SPECS}`, D.input)
    .option('--output <spec>', `output lengths: ${LENGTH_SPECS}`, D.output)
    .option(
      '--rate-scale <x>',
      'multiply the trace arrival rate by x (time compressed x times)',
      positiveNumber('--rate-scale'),
      D.rateScale,
    )
    .option(
      '--start <s>',
      'cut the trace from this second of trace time (before scaling)',
      nonNegativeNumber('--start'),
    )
    .option(
      '--duration <s>',
      'keep this many seconds of trace time (before scaling)',
      positiveNumber('--duration'),
    )
    .option('--tenants <spec>', 'tenants for rows without one: NAME | zipf:N:S', D.tenants)
    .option(
      '--classes <spec>',
      'SLO classes for rows without one: CLASS | CLASS:W,CLASS:W…',
      D.classes,
    )
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
    .option('--replicas <n>', 'replicas in the fleet', positiveInt('--replicas'), D.replicas)
    .option(
      '--autoscaler <type>',
      'scale the fleet: goodput | hpa-utilization | keda-queue | kpa-like | none (starts at --min-replicas)',
    )

    .option(
      '--scenario <shape>',
      'load shape: diurnal-burst (arrivals re-timed: a diurnal ramp 0.5×–1.5× over the run, ×3 for 10 minutes from 45%)',
    )
    .option(
      '--fail-group <seconds>',
      'at this time the busiest ready group fails: requests not yet streaming move elsewhere, streams under way end (repeatable)',
      (v: string, prev: number[] | undefined) => [
        ...(prev ?? []),
        nonNegativeNumber('--fail-group')(v),
      ],
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
    .option('--seed <n>', 'random seed (recorded in the report)', nonNegativeInt('--seed'), 1)
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
    trace: o.trace as string | undefined,
    traceFormat: o.traceFormat as string | undefined,
    arrival:
      (o.arrival as ScenarioSpec['arrival'] | undefined) ??
      (o.burstiness === 1 ? 'poisson' : 'gamma'),
    rate: o.rate as number,
    burstiness: o.burstiness as number,
    numRequests: o.numRequests as number,
    input: o.input as string,
    output: o.output as string,
    rateScale: o.rateScale as number,
    startS: o.start as number | undefined,
    durationS: o.duration as number | undefined,
    tenants: o.tenants as string,
    classes: o.classes as string,
    toolCalls: o.toolCalls as string | undefined,
    prefix: o.prefix as string | undefined,
    adapters: o.adapters as string | undefined,
    autoscaler: o.autoscaler as string | undefined,
    minReplicas: o.minReplicas as number | undefined,
    maxReplicas: o.maxReplicas as number | undefined,
    readyTime: o.readyTime as string | undefined,
    headroom: o.burstHeadroom as number | undefined,
    scaleInWindowS: o.scaleInWindow as number | undefined,
    scenario: o.scenario as string | undefined,
    failGroupAtS: o.failGroup as number[] | undefined,
    replicas: o.replicas as number,
    clientTimeoutMs: o.clientTimeoutMs as number | undefined,
    maxAttempts: o.maxAttempts as number,
    retryMode: o.retryMode as RetryMode,
    backoffBaseMs: o.backoffBaseMs as number,
    backoffCapMs: o.backoffCapMs as number,
  };
}
