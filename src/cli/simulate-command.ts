/** `goodput simulate`: one policy over one scenario; prints a summary, writes the JSON report. */
import { closeSync, openSync, writeSync } from 'node:fs';
import { Command } from 'commander';
import { wallClock } from '../runtime/wall-clock.ts';
import { runScenario } from '../sim/scenario.ts';
import { loadPolicy } from '../sim/policy-source.ts';
import { addScenarioFlags, scenarioFromFlags } from './sim-flags.ts';
import { progressBar } from './progress-bar.ts';
import { summaryTable } from './summary-table.ts';
import { checkOutputs, writeOutput } from './output-file.ts';
import { commandLine, withTimeline, writeHtmlReport } from './html-report.ts';
import { simReportDoc } from '../report/sim-report.ts';

export function simulateCommand(): Command {
  return addScenarioFlags(
    new Command('simulate')
      .description('simulate a fleet serving a workload under one control policy')
      .option(
        '--policy <name|file>',
        'preset name (baseline-vllm, least-request, goodput) or a YAML/JSON policy file',
        'baseline-vllm',
      )
      .option(
        '--decisions <file>',
        'write every decision record here, one JSON object per line, and beside it how each dispatched request ended (an "outcome" object)',
      )
      .option('--html <file>', 'write a self-contained HTML report with charts here'),
  ).action((flags: Record<string, unknown>) => {
    const policy = loadPolicy(flags.policy as string);
    const spec = scenarioFromFlags(flags, policy.engine.version);
    checkOutputs(['--out', flags.out], ['--html', flags.html], ['--decisions', flags.decisions]);
    const bar = progressBar(
      process.stderr,
      wallClock,
      spec.trace === undefined ? spec.numRequests : undefined,
    );
    const decisions =
      flags.decisions === undefined ? null : openSync(flags.decisions as string, 'w');
    const write =
      decisions === null
        ? undefined
        : (record: unknown) => writeSync(decisions, `${JSON.stringify(record)}\n`);
    const hooks = { wallClock, onProgress: bar.update, onDecision: write, onOutcomeRecord: write };
    const html = flags.html === undefined ? null : withTimeline(hooks);
    const report = runScenario(spec, policy, html?.hooks ?? hooks);
    if (decisions !== null) closeSync(decisions);
    bar.done();
    console.log(summaryTable([report]));
    if (flags.out !== undefined) {
      writeOutput('--out', flags.out as string, `${JSON.stringify(report, null, 2)}\n`);
      console.log(`\nreport written to ${flags.out as string}`);
    }
    if (html !== null)
      writeHtmlReport(
        flags.html as string,
        simReportDoc([{ report, timeline: html.timeline.data() }], commandLine()),
      );
  });
}
