/**
 * `goodput capacity`: the highest request rate per replica group at which SLO attainment (over
 * offered requests) stays at or above a target, for the command line's workload mix — searched
 * in the simulator, or, with `--url`, against a live endpoint. Prints each probe and the result,
 * and writes the envelope the autoscaler loads (`--capacity-envelope`).
 */
import { Command } from 'commander';
import { ENVELOPE_KIND, type CapacityEnvelope } from '../core/autoscale/capacity-envelope.ts';
import { searchCapacity } from '../core/autoscale/capacity-search.ts';
import { ConfigError } from '../core/errors.ts';
import { parseGoodputSpec } from '../loadgen/goodput-spec.ts';
import { serverBaseUrl } from '../openai/server-url.ts';
import { capacityReportDoc, probeTable } from '../report/capacity-report.ts';
import { loadPolicy } from '../sim/policy-source.ts';
import { commandLine, writeHtmlReport } from './html-report.ts';
import { checkOutputs, writeOutput } from './output-file.ts';
import { fraction, positiveInt, positiveNumber } from './parse-flags.ts';
import { liveProbe, mixOf, simulatedProbe, type Probe } from './capacity-probes.ts';
import { addScenarioFlags, scenarioFromFlags } from './sim-flags.ts';
import { workloadFromFlags } from './workload-flags.ts';

/**
 * The workload's `--rate`, said as capacity reads it: where the search starts, 1 req/s per group
 * unless given (the workload's default is a load, not a starting point).
 */
function firstRate(cmd: Command): Command {
  const rate = cmd.options.find((o) => o.long === '--rate');
  if (rate !== undefined) {
    rate.description =
      'the first probe, requests/s per group (default: 1), doubled until one fails';
    rate.defaultValue = undefined;
  }
  return cmd;
}

export function capacityCommand(): Command {
  return firstRate(
    addScenarioFlags(
      new Command('capacity')
        .description(
          'find the highest request rate per replica group that keeps SLO attainment at a target (simulated, or live with --url); --rate is the first probe per group, --replicas the groups',
        )
        .option(
          '--target <fraction>',
          'attainment over offered requests to hold',
          fraction('--target'),
          0.99,
        )
        .option(
          '--probe-seconds <s>',
          'arrivals each probe offers, in seconds (at least 200 requests, or --num-requests: at a low rate a probe lasts longer)',
          positiveNumber('--probe-seconds'),
          120,
        )
        .option(
          '--precision <x>',
          'stop when the failing rate is within this fraction of the passing one',
          positiveNumber('--precision'),
          0.05,
        )
        .option('--max-probes <n>', 'probes at most', positiveInt('--max-probes'), 16)
        .option(
          '--policy <name|file>',
          'simulated: the control policy in front of the groups',
          'baseline-vllm',
        )
        .option(
          '--url <url>',
          'probe a live OpenAI-compatible endpoint instead (with goodput bench)',
        )
        .option('--api-key <key>', 'live: bearer key (default: $OPENAI_API_KEY)')
        .option(
          '--goodput <slo>',
          'live: judge requests by ttft:MS,tpot:MS,e2el:MS (required with --url)',
        )
        .option('--html <file>', 'write a self-contained HTML report with charts here'),
    ).action(async (flags: Record<string, unknown>, cmd: Command) => {
      const fromCli = (name: string) => cmd.getOptionValueSource(name) === 'cli';
      const spec = scenarioFromFlags(flags);
      checkOutputs(flags, ['--out', flags.out], ['--html', flags.html]);
      if (spec.trace !== undefined)
        throw new ConfigError(
          '--trace',
          'a synthetic mix (--input/--output): capacity sets the arrival rate itself',
          spec.trace,
        );
      if (spec.autoscaler !== undefined && spec.autoscaler !== 'none')
        throw new ConfigError(
          '--autoscaler',
          'none: capacity measures a fixed number of groups',
          spec.autoscaler,
        );
      const probeSize = {
        seconds: flags.probeSeconds as number,
        minRequests: fromCli('numRequests') ? spec.numRequests : 200,
      };
      const live = flags.url !== undefined;
      let probe: Probe;
      let source: string;
      if (live) {
        if (flags.goodput === undefined)
          throw new ConfigError(
            '--goodput',
            'the SLO a live probe judges by, e.g. ttft:2000,tpot:80',
            undefined,
          );
        const baseUrl = serverBaseUrl(flags.url as string, '--url');
        source = `live:${baseUrl}`;
        probe = liveProbe(
          {
            baseUrl,
            apiKey: (flags.apiKey as string | undefined) ?? process.env.OPENAI_API_KEY,
            // --model names the simulated engine's model; live, it is the name to ask for when given.
            model: fromCli('model') ? (flags.model as string) : undefined,
            endpoint: 'completions',
            workload: workloadFromFlags(flags),
            seed: spec.seed,
            sendClass: fromCli('classes'),
            slo: parseGoodputSpec(flags.goodput as string),
            percentiles: [99],
            timeoutMs: 600_000,
          },
          spec.replicas,
          probeSize,
        );
      } else {
        const policy = loadPolicy(flags.policy as string);
        source = `simulator:${policy.name}`;
        probe = simulatedProbe(scenarioFromFlags(flags, policy.engine.version), policy, probeSize);
      }
      const target = flags.target as number;
      const firstRate = fromCli('rate') ? (flags.rate as number) : 1;
      // Everything at once is no rate to double or halve from.
      if (!Number.isFinite(firstRate)) {
        throw new ConfigError(
          '--rate',
          'a number > 0 (the first probe: capacity searches from it)',
          'inf',
        );
      }
      const search = await searchCapacity(
        async (rate) => {
          const p = await probe(rate);
          console.error(
            `probe ${rate.toFixed(3)} req/s per group: attainment ${(p.attainment * 100).toFixed(2)}%`,
          );
          return p;
        },
        {
          target,
          firstRate,
          precision: flags.precision as number,
          maxProbes: flags.maxProbes as number,
          minRate: 0.01,
        },
      );

      const envelope: CapacityEnvelope & Record<string, unknown> = {
        kind: ENVELOPE_KIND,
        version: 1,
        source,
        rate_per_group_rps: search.ratePerGroup,
        failed_at_rps: search.failedAt,
        target,
        denominator: 'offered',
        groups: spec.replicas,
        mix: mixOf(workloadFromFlags(flags), spec.seed),
        engine: live
          ? null
          : {
              model: spec.model,
              gpu: spec.gpu,
              tp: spec.tp,
              engine_version: spec.engineVersion ?? null,
            },
        workload: {
          input: spec.input,
          output: spec.output,
          arrival: spec.arrival,
          burstiness: spec.burstiness,
          tenants: spec.tenants,
          classes: spec.classes,
        },
        seed: spec.seed,
        probes: search.probes.map((p) => ({
          rate_per_group_rps: p.ratePerGroup,
          attainment_offered: p.attainment,
          pass: p.pass,
          ...p.detail,
        })),
      };
      console.log(capacityTable(envelope));
      if (search.ratePerGroup === 0)
        console.log('\nno rate held the target: capacity 0 at this SLO');
      else if (search.failedAt === null) {
        console.log(
          `\nevery probe held the target: ${search.ratePerGroup} req/s per group is a lower bound, not the capacity (raise --max-probes or --rate); the envelope says so (failed_at_rps: null)`,
        );
      }
      if (flags.out !== undefined) {
        writeOutput('--out', flags.out as string, `${JSON.stringify(envelope, null, 2)}\n`);
        console.log(
          `\nenvelope written to ${flags.out as string} (load it with --capacity-envelope)`,
        );
      }
      if (flags.html !== undefined)
        writeHtmlReport(flags.html as string, capacityReportDoc(envelope, commandLine()));
    }),
  );
}

function capacityTable(e: CapacityEnvelope & Record<string, unknown>): string {
  const { columns, rows } = probeTable(e);
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((r) => r[i].length)));
  const line = (vals: readonly string[]) => vals.map((v, i) => v.padStart(widths[i])).join('  ');
  return [
    line(columns),
    ...rows.map(line),
    '',
    `capacity: ${e.rate_per_group_rps.toFixed(3)} req/s per group at ${(e.target * 100).toFixed(1)}% attainment (offered), mix ${e.mix.input_mean.toFixed(0)} in / ${e.mix.output_mean.toFixed(0)} out tokens, ${e.source}`,
  ].join('\n');
}
