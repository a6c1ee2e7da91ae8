/**
 * `goodput bench`: an open-loop load generator against any OpenAI-compatible server (Goodput's
 * gateway, `goodput engine`, vLLM), with `vllm bench serve`'s request-rate and burstiness
 * semantics and its result fields. The workload flags are `simulate`'s: one command line
 * benchmarks the live system and, with `simulate`, predicts it. Bad flags exit 2 naming the
 * flag; a server that refuses or fails is counted in the result, never a crash.
 */
import { Command, Option } from 'commander';
import { ConfigError } from '../core/errors.ts';
import { BENCH_ENDPOINTS, type BenchEndpoint } from '../loadgen/bench-call.ts';
import { benchResult } from '../loadgen/bench-result.ts';
import { parseGoodputSpec } from '../loadgen/goodput-spec.ts';
import { BenchInterrupted, runBench, type BenchSpec } from '../loadgen/run-bench.ts';
import { serverBaseUrl } from '../openai/server-url.ts';
import { epochMs, wallClock } from '../runtime/wall-clock.ts';
import { wallTimers } from '../runtime/wall-timers.ts';
import { benchTable } from './bench-table.ts';
import { checkOutputs, writeOutput } from './output-file.ts';
import { commandLine, writeHtmlReport } from './html-report.ts';
import { benchReportDoc } from '../report/bench-report.ts';
import { positiveInt, positiveNumber } from './parse-flags.ts';
import { progressBar } from './progress-bar.ts';
import { addWorkloadFlags, workloadFromFlags } from './workload-flags.ts';

export function benchCommand(): Command {
  return addWorkloadFlags(
    new Command('bench')
      .description(
        'an open-loop benchmark of a live OpenAI-compatible server, with vllm bench serve semantics',
      )
      .requiredOption('--url <url>', 'the server: http(s)://host:port (a trailing /v1 is accepted)')
      .option(
        '--api-key <key>',
        'bearer key for every request (default: $OPENAI_API_KEY)',
        bearerKey('--api-key'),
      )
      .option(
        '--tenant-key <tenant=key>',
        'the key a workload tenant sends (repeatable): the server knows tenants by key',
        collectTenantKey,
      )
      .option('--model <name>', 'model to ask for (default: the first the server lists)')
      .addOption(
        new Option(
          '--endpoint <kind>',
          'completions: token-id prompts of exact length; chat: filler text of about that length; responses: the same filler to the Responses API',
        )
          .choices(BENCH_ENDPOINTS)
          .default('completions'),
      )
      .option(
        '--keep-responses',
        'with --endpoint responses: ask the server to keep each response (store: true, as OpenAI defaults); without it a run keeps none (store: false)',
      )
      .option(
        '--max-concurrency <n>',
        'requests in flight at most; those due beyond it wait their turn',
        positiveInt('--max-concurrency'),
      )
      .option(
        '--goodput <slo>',
        'judge requests good by ttft:MS,tpot:MS,e2el:MS (any of them); adds request_goodput',
      )
      .option(
        '--metric-percentiles <list>',
        'percentiles to report, comma-separated',
        percentileList,
        [99],
      )
      .option(
        '--request-timeout <s>',
        'a request with no complete answer after this long fails as client_timeout',
        positiveNumber('--request-timeout'),
        600,
      )
      .option('--json <file>', 'write the result here (vllm bench serve field names)')
      .option('--save-detailed', 'add per-request lists to the JSON: lengths, TTFTs, gaps, errors')
      .option('--label <text>', 'a label recorded in the result')
      .option('--html <file>', 'write a self-contained HTML report with charts here'),
  ).action(async (flags: Record<string, unknown>, cmd: Command) => {
    const workload = workloadFromFlags(flags);
    checkOutputs(flags, ['--json', flags.json], ['--html', flags.html]);
    const spec: BenchSpec = {
      baseUrl: serverBaseUrl(flags.url as string, '--url'),
      apiKey: (flags.apiKey as string | undefined) ?? envKey(process.env.OPENAI_API_KEY),
      tenantKeys: flags.tenantKey as Map<string, string> | undefined,
      model: flags.model as string | undefined,
      endpoint: flags.endpoint as BenchEndpoint,
      workload,
      seed: flags.seed as number,
      // Classes travel when the run chose them: by --classes, or a trace's rows.
      sendClass: cmd.getOptionValueSource('classes') === 'cli' || workload.trace !== undefined,
      keepResponses: flags.keepResponses === true,
      maxConcurrency: flags.maxConcurrency as number | undefined,
      slo: flags.goodput === undefined ? undefined : parseGoodputSpec(flags.goodput as string),
      percentiles: flags.metricPercentiles as number[],
      timeoutMs: (flags.requestTimeout as number) * 1000,
    };
    const bar = progressBar(
      process.stderr,
      wallClock,
      workload.trace === undefined ? workload.numRequests : undefined,
      '',
      'wall',
    );
    const started = wallClock.now();
    const stop = interruptible();
    const run = await runBench(spec, {
      clock: wallClock,
      timers: wallTimers(),
      onEnd: (ended) => bar.update(wallClock.now() - started, ended),
      stop: stop.signal,
    })
      .catch((e: unknown) => {
        if (!(e instanceof BenchInterrupted)) throw e;
        bar.done();
        console.error(e.message);
        process.exitCode = 130;
        return undefined;
      })
      .finally(() => stop.release());
    if (run === undefined) return;
    bar.done();
    if (stop.signal.aborted) {
      // The result of what was sent is still told, and the exit says it was cut short.
      const cut = run.records.filter((r) => r.reason === 'interrupted').length;
      console.log(
        `interrupted: ${run.offered} requests sent, ${cut} of them cut short (failed: interrupted)`,
      );
      process.exitCode = 130;
    }
    const rate = workload.trace === undefined ? workload.rate * workload.rateScale : null;
    console.log(
      benchTable(run.metrics, {
        rate,
        maxConcurrency: spec.maxConcurrency,
        percentiles: spec.percentiles,
      }),
    );
    if (flags.json !== undefined) {
      const result = benchResult(spec, run, {
        date: vllmDate(epochMs()),
        label: flags.label as string | undefined,
        detailed: flags.saveDetailed === true,
      });
      writeOutput('--json', flags.json as string, `${JSON.stringify(result, null, 2)}\n`);
      console.log(`\nresult written to ${flags.json as string}`);
    }
    if (flags.html !== undefined)
      writeHtmlReport(flags.html as string, benchReportDoc(spec, run, commandLine()));
  });
}

/**
 * Ctrl-C or SIGTERM ends the run early, with its result: nothing more is sent and what is
 * running is cut. A second signal leaves at once.
 */
function interruptible() {
  const stop = new AbortController();
  const onSignal = () => {
    if (stop.signal.aborted) process.exit(130);
    process.stderr.write('\ninterrupted: ending the run (again to leave at once)\n');
    stop.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: stop.signal,
    release: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** What a bearer key may hold: printable ASCII, no space (an HTTP header carries it). */
const BEARER_KEY = /^[\x21-\x7e]+$/;

function bearerKey(flag: string) {
  return (value: string): string => {
    if (BEARER_KEY.test(value)) return value;
    // The key itself is not repeated: a secret has no place in an error.
    const chars = [...value];
    const at = chars.findIndex((c) => !BEARER_KEY.test(c));
    const code = chars[at]?.codePointAt(0) ?? 0;
    const what =
      value === ''
        ? 'an empty key'
        : `U+${code.toString(16).toUpperCase().padStart(4, '0')} at character ${at + 1}`;
    throw new ConfigError(flag, 'a key of printable ASCII without spaces', what);
  };
}

/** `$OPENAI_API_KEY`, where set and not empty: held to a flag's rule, named as itself. */
function envKey(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : bearerKey('$OPENAI_API_KEY')(value);
}

function collectTenantKey(value: string, prev: Map<string, string> | undefined) {
  const at = value.indexOf('=');
  if (at <= 0 || at === value.length - 1)
    throw new ConfigError('--tenant-key', 'TENANT=KEY, e.g. acme=sk-acme-1', value);
  const tenant = value.slice(0, at);
  const map = new Map(prev);
  if (map.has(tenant)) throw new ConfigError('--tenant-key', `one key for tenant ${tenant}`, value);
  return map.set(tenant, bearerKey('--tenant-key')(value.slice(at + 1)));
}

function percentileList(value: string): number[] {
  const qs = value.split(',').map((s) => Number(s.trim()));
  if (
    qs.length === 0 ||
    qs.some((q, i) => value.split(',')[i].trim() === '' || !(q > 0 && q < 100))
  )
    throw new ConfigError(
      '--metric-percentiles',
      'numbers in (0, 100), comma-separated, e.g. 50,90,99',
      value,
    );
  return qs;
}

/** vLLM's result date: local `YYYYMMDD-HHMMSS`. */
function vllmDate(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}
