/**
 * The workload flags `simulate`, `compare` and `bench` share: the same flags and seed build the
 * same request stream, so a simulated run and a live benchmark of one command line offer the
 * same load. Every numeric flag is validated as it is parsed.
 */
import { Option, type Command } from 'commander';
import { ConfigError } from '../core/errors.ts';
import { MAX_CHOICES } from '../core/request/request.ts';
import { SCENARIO_DEFAULTS as D } from '../sim/scenario.ts';
import type { WorkloadOptions } from '../sim/workload/workload-options.ts';
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

/** A flag of the synthetic workload: a trace's rows give its arrivals and lengths instead. */
const synthetic = (flags: string, description: string) =>
  new Option(flags, description).conflicts('trace');

export function addWorkloadFlags(cmd: Command): Command {
  return cmd
    .option(
      '--trace <file>',
      'replay a trace: Azure 2023 CSV, Mooncake JSONL, BurstGPT CSV, native JSONL, or a decision log (--decisions) of goodput serve or simulate',
    )
    .option(
      '--trace-format <format>',
      'azure | mooncake | burstgpt | jsonl | decisions (default: detected from content)',
    )
    .addOption(
      new Option(
        '--arrival <process>',
        'synthetic arrivals (default: poisson, or gamma when --burstiness is not 1); either, given with --trace, re-times the trace at its own mean rate',
      ).choices(['poisson', 'gamma']),
    )
    .addOption(
      synthetic('--rate <rps>', 'synthetic arrival rate, requests/s, or inf: every request at once')
        .argParser(positiveRate('--rate'))
        .default(D.rate),
    )
    .option(
      '--burstiness <b>',
      'gamma shape (vLLM --burstiness): 1 = Poisson, < 1 burstier',
      positiveNumber('--burstiness'),
      D.burstiness,
    )
    .addOption(
      synthetic('--num-requests <n>', 'synthetic requests to generate')
        .argParser(positiveInt('--num-requests'))
        .default(D.numRequests),
    )
    .addOption(synthetic('--input <spec>', `input lengths: ${LENGTH_SPECS}`).default(D.input))
    .addOption(synthetic('--output <spec>', `output lengths: ${LENGTH_SPECS}`).default(D.output))
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
      '--n <n>',
      `choices asked of each request (OpenAI's n, 1 to ${MAX_CHOICES}), every one its output long: one prompt, n replies, as RL trainers' group sampling asks`,
      choiceFlag,
      1,
    )
    .option('--seed <n>', 'random seed (recorded in the report)', nonNegativeInt('--seed'), 1);
}

function choiceFlag(value: string): number {
  const n = positiveInt('--n')(value);
  if (n > MAX_CHOICES) throw new ConfigError('--n', `an integer from 1 to ${MAX_CHOICES}`, value);
  return n;
}

/** The options every flag above sets, a default included. */
export type FlaggedWorkload = WorkloadOptions &
  Required<
    Pick<
      WorkloadOptions,
      | 'arrival'
      | 'rate'
      | 'burstiness'
      | 'numRequests'
      | 'input'
      | 'output'
      | 'rateScale'
      | 'tenants'
      | 'classes'
    >
  >;

/** Commander's parsed options → the workload part of a scenario. */
export function workloadFromFlags(o: Record<string, unknown>): FlaggedWorkload {
  return {
    trace: o.trace as string | undefined,
    traceFormat: o.traceFormat as string | undefined,
    // A trace re-timed by a Poisson process asked for by name: a Gamma one of shape 1.
    arrival:
      o.trace !== undefined && o.arrival === 'poisson'
        ? 'gamma'
        : ((o.arrival as WorkloadOptions['arrival'] | undefined) ??
          (o.burstiness === 1 ? 'poisson' : 'gamma')),
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
    ...(o.n === undefined || o.n === 1 ? {} : { choices: o.n as number }),
  };
}
