/**
 * `goodput simulate`: one policy over one scenario; prints a summary, writes the JSON report.
 * `--learned-state` starts the pipeline from what a gateway or an earlier run learned, as a
 * restarted gateway does; `--save-learned-state` keeps what this run learned.
 */
import { readFileSync, statSync } from 'node:fs';
import { Command } from 'commander';
import { epochMs, wallClock } from '../runtime/wall-clock.ts';
import { ConfigError } from '../core/errors.ts';
import type { Learned } from '../core/estimate/learned.ts';
import {
  learnedStateText,
  parseLearnedState,
  restoreLearned,
  type LearnedState,
} from '../core/estimate/learned-state.ts';
import { runScenario } from '../sim/scenario.ts';
import { loadPolicy } from '../sim/policy-source.ts';
import { addScenarioFlags, scenarioFromFlags } from './sim-flags.ts';
import { progressBar } from './progress-bar.ts';
import { summaryTable } from './summary-table.ts';
import { checkOutputs, lineFile, writeOutput } from './output-file.ts';
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
      .option('--html <file>', 'write a self-contained HTML report with charts here')
      .option(
        '--learned-state <file>',
        'start from what a gateway (serve --learned-state) or an earlier run learned (output lengths), not cold',
      )
      .option(
        '--save-learned-state <file>',
        'write what the run learned here, for --learned-state (of simulate or serve)',
      ),
  ).action((flags: Record<string, unknown>) => {
    const policy = loadPolicy(flags.policy as string);
    const spec = scenarioFromFlags(flags, policy.engine.version);
    checkOutputs(
      flags,
      ['--out', flags.out],
      ['--html', flags.html],
      ['--decisions', flags.decisions],
      ['--save-learned-state', flags.saveLearnedState],
    );
    const restored =
      flags.learnedState === undefined
        ? undefined
        : readLearnedState(flags.learnedState as string, spec.model);
    let learned: Learned | undefined;
    const bar = progressBar(
      process.stderr,
      wallClock,
      spec.trace === undefined ? spec.numRequests : undefined,
    );
    const decisions =
      flags.decisions === undefined ? null : lineFile('--decisions', flags.decisions as string);
    const write =
      decisions === null ? undefined : (record: unknown) => decisions.write(JSON.stringify(record));
    const hooks = {
      wallClock,
      onProgress: bar.update,
      onDecision: write,
      onOutcomeRecord: write,
      withLearned: (l: Learned) => {
        if (restored !== undefined) restoreLearned(l, restored);
        learned = l;
      },
    };
    const html = flags.html === undefined ? null : withTimeline(hooks);
    let report: ReturnType<typeof runScenario>;
    try {
      report = runScenario(spec, policy, html?.hooks ?? hooks);
    } catch (e) {
      decisions?.discard();
      throw e;
    }
    decisions?.close();
    bar.done();
    console.log(summaryTable([report]));
    const skipped = skippedRows(report.scenario);
    if (skipped !== undefined) console.log(`\ntrace: ${skipped}`);
    if (flags.out !== undefined) {
      writeOutput('--out', flags.out as string, `${JSON.stringify(report, null, 2)}\n`);
      console.log(`\nreport written to ${flags.out as string}`);
    }
    if (flags.saveLearnedState !== undefined && learned !== undefined) {
      const to = flags.saveLearnedState as string;
      // What the simulator does not learn (a prompt's scale, what images by URL took) is kept
      // as it was restored: the file is a gateway's to start from too.
      const beside = {
        model: spec.model,
        urlImageTokens: restored?.urlImageTokens,
        promptScale: restored?.promptScale,
      };
      writeOutput('--save-learned-state', to, learnedStateText(learned, epochMs(), beside));
    }
    if (html !== null)
      writeHtmlReport(
        flags.html as string,
        simReportDoc([{ report, timeline: html.timeline.data() }], commandLine()),
      );
  });
}

/** The learned state in `file`; one it cannot read is a ConfigError naming the file and field. */
function readLearnedState(file: string, model: string): LearnedState {
  let text: string;
  try {
    // A FIFO or a device would hang the read.
    if (!statSync(file).isFile()) throw new Error('not a regular file');
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError('--learned-state', `a readable file (${(e as Error).message})`, file);
  }
  let state: LearnedState;
  try {
    state = parseLearnedState(text);
  } catch (e) {
    throw e instanceof ConfigError ? e.inFile(file) : e;
  }
  // Its lengths and prompt scale are another model's.
  if (state.model !== undefined && state.model !== model) {
    throw new ConfigError('model', `${model}, the model this run serves`, state.model, file);
  }
  return state;
}

/**
 * The trace rows a run passed over, by reason (a decision log's retries and unread requests, a
 * cut last line, a BurstGPT failure…): said where an operator reads the run, not only in its
 * JSON. Undefined when none was.
 */
function skippedRows(scenario: Readonly<Record<string, unknown>>): string | undefined {
  const workload = scenario.workload as { rowsSkipped?: Record<string, number> } | undefined;
  const by = Object.entries(workload?.rowsSkipped ?? {});
  if (by.length === 0) return undefined;
  const total = by.reduce((n, [, k]) => n + k, 0);
  return `${total} rows skipped (${by.map(([why, n]) => `${why}: ${n}`).join(', ')})`;
}
