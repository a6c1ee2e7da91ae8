/**
 * `--html FILE` for the simulator's commands: a run timeline fed from the run's own decision
 * records and outcomes (hooks added beside any the command has), and the page written once
 * the runs are done. The timeline is not part of the JSON report, which stays byte-identical
 * with or without a page.
 */
import type { DecisionRecord } from '../core/observe/decision-record.ts';
import { SERVICE_WEIGHTS } from '../core/observe/outcome-accumulator.ts';
import { RunTimeline } from '../core/observe/run-timeline.ts';
import type { RunHooks } from '../sim/scenario.ts';
import type { ReportDoc } from '../report/chart-spec.ts';
import { reportPage } from '../report/report-page.ts';
import { writeOutput } from './output-file.ts';

/** Hooks that also feed a timeline, and the timeline. */
export function withTimeline(hooks: RunHooks): { hooks: RunHooks; timeline: RunTimeline } {
  const timeline = new RunTimeline({ weights: SERVICE_WEIGHTS });
  return {
    timeline,
    hooks: {
      ...hooks,
      onDecision: (r: DecisionRecord) => {
        timeline.decision(r);
        hooks.onDecision?.(r);
      },
      onOutcome: (o, atMs, good) => {
        timeline.outcome(o, atMs, good);
        hooks.onOutcome?.(o, atMs, good);
      },
    },
  };
}

export function writeHtmlReport(file: string, doc: ReportDoc): void {
  writeOutput('--html', file, reportPage(doc));
  console.log(`HTML report written to ${file}`);
}

/** The command line as typed, for the page's subtitle. */
export function commandLine(): string {
  return ['goodput', ...process.argv.slice(2)]
    .map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`))
    .join(' ');
}
