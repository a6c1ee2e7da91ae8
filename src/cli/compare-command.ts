/** `goodput compare`: several policies over the same scenario (same seed, same requests), side by side. */
import { Command } from 'commander';
import { wallClock } from '../runtime/wall-clock.ts';
import { runScenario } from '../sim/scenario.ts';
import { loadPolicy } from '../sim/policy-source.ts';
import { ConfigError } from '../core/errors.ts';
import { addScenarioFlags, scenarioFromFlags } from './sim-flags.ts';
import { progressBar } from './progress-bar.ts';
import { summaryTable } from './summary-table.ts';
import { checkOutputs, writeOutput } from './output-file.ts';
import { commandLine, withTimeline, writeHtmlReport } from './html-report.ts';
import { simReportDoc } from '../report/sim-report.ts';

export function compareCommand(): Command {
  return addScenarioFlags(
    new Command('compare')
      .description('run several policies on the same workload and print them side by side')
      .requiredOption(
        '--policies <list>',
        'comma-separated preset names or policy files, e.g. baseline-vllm,least-request',
      )
      .option('--html <file>', 'write a self-contained HTML report with charts here'),
  ).action((flags: Record<string, unknown>) => {
    const sources = (flags.policies as string).split(',').map((p) => p.trim());
    const policies = sources.map((p) => loadPolicy(p, '--policies'));
    // Each run is told by its policy's name, in the table and on the page.
    const named = new Map<string, string>();
    policies.forEach(({ name }, i) => {
      const first = named.get(name);
      if (first !== undefined) {
        const why = `policies of distinct names (each run is told by its name; ${first} and ${sources[i]} share one)`;
        throw new ConfigError('--policies', why, name);
      }
      named.set(name, sources[i]);
    });
    // One fleet for every policy: their engine sections, if any, must agree.
    const versions = [...new Set(policies.flatMap((p) => p.engine.version ?? []))];
    if (flags.engineVersion === undefined && versions.length > 1) {
      throw new ConfigError(
        'engineVersion',
        `--engine-version, as the policies name different engines (${versions.join(', ')})`,
        undefined,
      );
    }
    const spec = scenarioFromFlags(flags, versions[0]);
    checkOutputs(flags, ['--out', flags.out], ['--html', flags.html]);
    const runs = policies.map((policy) => {
      const bar = progressBar(
        process.stderr,
        wallClock,
        spec.trace === undefined ? spec.numRequests : undefined,
        `${policy.name} `,
      );
      const hooks = { wallClock, onProgress: bar.update };
      // A timeline only for the page: the runs without one do nothing more than before.
      const html = flags.html === undefined ? null : withTimeline(hooks);
      const report = runScenario(spec, policy, html?.hooks ?? hooks);
      bar.done();
      return { report, timeline: html?.timeline.data() };
    });
    const reports = runs.map((r) => r.report);
    console.log(summaryTable(reports));
    if (flags.out !== undefined) {
      writeOutput(
        '--out',
        flags.out as string,
        `${JSON.stringify({ seed: spec.seed, reports }, null, 2)}\n`,
      );
      console.log(`\nreports written to ${flags.out as string}`);
    }
    if (flags.html !== undefined) {
      const pages = runs.map(({ report, timeline }) => ({ report, timeline: timeline! }));
      writeHtmlReport(flags.html as string, simReportDoc(pages, commandLine()));
    }
  });
}
