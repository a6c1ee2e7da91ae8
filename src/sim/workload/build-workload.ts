/**
 * The one entry point for workloads: validates the options, loads what they name (a trace, a
 * length table) and returns a lazy, re-iterable request stream with its description. All
 * checking and loading happens here, so a bad option or trace line fails before the simulation
 * starts; iterating never throws. Which options apply to which kind is set out in
 * workload-options.ts.
 */
import { ConfigError } from '../../core/errors.ts';
import type { Rng } from '../../core/ports/rng.ts';
import { MAX_CHOICES, type LlmRequest } from '../../core/request/request.ts';
import { formatClassSpec, parseClassSpec, type ClassSpec } from './class-spec.ts';
import { formatLengthSpec, jointTable, parseLengthSpec, tablesNamed } from './length-spec.ts';
import { lengthTable } from './sharegpt-lengths.ts';
import { syntheticRequests } from './synthetic-workload.ts';
import { formatPrefixMix, parsePrefixMix, prefixRequests } from './prefix-workload.ts';
import { formatAdapterSpec, parseAdapterSpec, withAdapters } from './adapter-spec.ts';
import { burstStartMs, parseLoadScenario, withLoadScenario } from './load-scenario.ts';
import { formatToolCallSpec, parseToolCallSpec } from './tool-call-spec.ts';
import { formatTenantSpec, parseTenantSpec, type TenantSpec } from './tenant-spec.ts';
import { loadTrace } from './trace/load-trace.ts';
import { traceRequests } from './trace/trace-workload.ts';
import { scaledArrival, selectWindow, type TraceWindow } from './trace/trace-window.ts';
import { arrivalClock } from './arrivals.ts';
import { WORKLOAD_STREAMS as S } from './streams.ts';
import type {
  SyntheticDescription,
  TraceDescription,
  WorkloadDescription,
} from './workload-description.ts';
import {
  ARRIVAL_KINDS,
  TRACE_FORMAT_ALIASES,
  TRACE_FORMAT_NAMES,
  WORKLOAD_DEFAULTS as D,
  WORKLOAD_FLAGS as F,
  type ArrivalKind,
  type TraceFormatName,
  type WorkloadOptions,
} from './workload-options.ts';

export interface Workload {
  readonly requests: Iterable<LlmRequest>;
  readonly describe: WorkloadDescription;
}

export function buildWorkload(opts: WorkloadOptions, rng: Rng): Workload {
  const tenants = parseTenantSpec(opts.tenants ?? D.tenants, F.tenants);
  const classes = parseClassSpec(opts.classes ?? D.classes, F.classes);
  const rateScale = positive(opts.rateScale ?? D.rateScale, 'rateScale', false);
  const w =
    opts.trace === undefined
      ? buildSynthetic(opts, rng, { tenants, classes, rateScale })
      : buildTrace(opts, opts.trace, rng, { tenants, classes, rateScale });
  const shaped = opts.scenario === undefined ? w : withScenario(w, opts.scenario);
  const chosen = withChoices(shaped, choiceCount(opts.choices ?? 1));
  if (opts.adapters === undefined) return chosen;
  const adapters = parseAdapterSpec(opts.adapters, F.adapters);
  return {
    requests: withAdapters(chosen.requests, adapters, () => rng.fork(S.adapters)),
    describe: { ...chosen.describe, adapters: formatAdapterSpec(adapters) },
  };
}

/**
 * The workload with every request asking for `n` choices of its prompt (OpenAI's `n`), each as
 * long as the request's output: what `goodput bench --n` asks a live server for (every choice
 * runs to `max_tokens`). A trace row that says its own `n` keeps it; one choice leaves the
 * workload as it is.
 */
function withChoices(w: Workload, n: number): Workload {
  if (n === 1) return w;
  const requests = w.requests;
  return {
    requests: {
      *[Symbol.iterator]() {
        for (const r of requests) yield r.choices === undefined ? { ...r, choices: n } : r;
      },
    },
    describe: { ...w.describe, choices: n },
  };
}

/** The workload re-timed to a load shape over its own span (its last arrival). */
function withScenario(w: Workload, name: string): Workload {
  parseLoadScenario(name, F.scenario);
  let spanMs = 0;
  for (const r of w.requests) spanMs = r.arrivalMs;
  return {
    requests: withLoadScenario(w.requests, Math.max(1, spanMs)),
    describe: {
      ...w.describe,
      scenario: { name, spanS: spanMs / 1000, burstAtS: burstStartMs(spanMs) / 1000 },
    },
  };
}

interface Common {
  readonly tenants: TenantSpec;
  readonly classes: ClassSpec;
  readonly rateScale: number;
}

function buildSynthetic(opts: WorkloadOptions, rng: Rng, c: Common): Workload {
  rejectTraceOnly(opts);
  const arrival = arrivalKind(opts);
  const burstiness = positive(opts.burstiness ?? D.burstiness, 'burstiness', true);
  if (arrival === 'poisson' && burstiness !== 1) {
    const expected = `1 with ${F.arrival} poisson (pass ${F.arrival} gamma for other values)`;
    throw new ConfigError(F.burstiness, expected, burstiness);
  }
  const rateRps = positive(opts.rate ?? D.rate, 'rate', true) * c.rateScale;
  const numRequests = count(opts.numRequests ?? D.numRequests);
  const input = parseLengthSpec(opts.input ?? D.input, F.input);
  const output = parseLengthSpec(opts.output ?? D.output, F.output);
  const tables = Object.fromEntries(tablesNamed(input, output).map((n) => [n, lengthTable(n)]));
  const toolCalls =
    opts.toolCalls === undefined ? undefined : parseToolCallSpec(opts.toolCalls, F.toolCalls);
  const prefix = opts.prefix === undefined ? undefined : parsePrefixMix(opts.prefix, F.prefix);
  const describe: SyntheticDescription = {
    kind: 'synthetic',
    arrival,
    rateRps,
    burstiness,
    numRequests,
    durationS: numRequests / rateRps,
    input: formatLengthSpec(input),
    output: formatLengthSpec(output),
    jointLengths: jointTable(input, output) !== undefined,
    tenants: formatTenantSpec(c.tenants),
    classes: formatClassSpec(c.classes),
    ...(toolCalls === undefined ? {} : { toolCalls: formatToolCallSpec(toolCalls) }),
    ...(prefix === undefined ? {} : { prefix: formatPrefixMix(prefix) }),
  };
  const arrivals = { rateRps, burstiness, count: numRequests };
  if (prefix !== undefined) {
    if (toolCalls !== undefined) {
      throw new ConfigError(F.toolCalls, `nothing with ${F.prefix}`, opts.toolCalls);
    }
    const plan = { arrivals, mix: prefix, output, tenants: c.tenants, classes: c.classes, tables };
    return { requests: prefixRequests(plan, rng), describe };
  }
  const requests = syntheticRequests(
    {
      arrivals,
      input,
      output,
      tenants: c.tenants,
      classes: c.classes,
      tables,
      toolCalls,
    },
    rng,
  );
  return { requests, describe };
}

function buildTrace(opts: WorkloadOptions, file: string, rng: Rng, c: Common): Workload {
  if (opts.prefix !== undefined) {
    throw new ConfigError(
      F.prefix,
      `nothing with ${F.trace} (rows carry their prefixes)`,
      opts.prefix,
    );
  }
  if (opts.toolCalls !== undefined) {
    throw new ConfigError(
      F.toolCalls,
      `nothing with ${F.trace} (rows carry tool_calls)`,
      opts.toolCalls,
    );
  }
  const format = traceFormat(opts.traceFormat);
  const startS = nonNegative(opts.startS ?? D.startS, 'startS');
  const durationS =
    opts.durationS === undefined ? undefined : positive(opts.durationS, 'durationS', false);
  const table = loadTrace(file, format);
  const window = selectWindow(table.tMs, startS, durationS);
  // A window replayed over more than a year (a sparse trace, or --rate-scale near 0) would
  // simulate its idle time tick by tick.
  const replayDays = (table.tMs[window.to - 1] - window.startMs) / c.rateScale / 86_400_000;
  if (!(replayDays <= MAX_REPLAY_DAYS)) {
    throw new ConfigError(
      F.trace,
      `a window replayed over at most ${MAX_REPLAY_DAYS} days (--start, --duration and --rate-scale choose it); this one takes ${replayDays.toPrecision(3)} days`,
      file,
    );
  }
  const arrivalsMs = retimedArrivals(opts, table.tMs, window, c.rateScale, rng);
  let inputTokens = 0;
  let outputTokens = 0;
  let maxChoices = 1;
  for (let i = window.from; i < window.to; i++) {
    inputTokens += table.inputTokens[i];
    outputTokens += table.outputTokens[i];
    maxChoices = Math.max(maxChoices, table.extras?.[i]?.choices ?? 1);
  }
  const describe: TraceDescription = {
    kind: 'trace',
    file,
    format: table.format,
    formatDetected: table.formatDetected,
    rowsRead: table.rowsRead,
    rowsSkipped: table.skipped,
    rowsReordered: table.reordered,
    traceSpanS: table.tMs[table.rows - 1] / 1000,
    window: { startS, durationS: durationS ?? null },
    rateScale: c.rateScale,
    numRequests: window.to - window.from,
    retimed:
      arrivalsMs === undefined
        ? null
        : { arrival: 'gamma', burstiness: opts.burstiness ?? D.burstiness },
    firstArrivalMs: arrivalsMs?.[0] ?? scaledArrival(table.tMs[window.from], window, c.rateScale),
    lastArrivalMs:
      arrivalsMs?.[arrivalsMs.length - 1] ??
      scaledArrival(table.tMs[window.to - 1], window, c.rateScale),
    inputTokens,
    outputTokens,
    tenants: formatTenantSpec(c.tenants),
    classes: formatClassSpec(c.classes),
    ...(maxChoices > 1 ? { maxChoices } : {}),
  };
  const requests = traceRequests(
    { table, window, rateScale: c.rateScale, arrivalsMs, tenants: c.tenants, classes: c.classes },
    rng,
  );
  return { requests, describe };
}

/**
 * A trace re-timed (`--arrival gamma`, or a burstiness other than 1): its window's requests, in
 * their order and with their sizes, arrive by a Gamma process at the window's own mean rate
 * (times the rate scale), ending when the scaled window ends — the same load, burstier or
 * smoother. Undefined when the trace keeps its recorded times.
 */
/** The longest a trace's window may take to replay. */
const MAX_REPLAY_DAYS = 366;

function retimedArrivals(
  opts: WorkloadOptions,
  tMs: Float64Array,
  window: TraceWindow,
  rateScale: number,
  rng: Rng,
): Float64Array | undefined {
  if (arrivalKind(opts) !== 'gamma') return undefined;
  const burstiness = positive(opts.burstiness ?? D.burstiness, 'burstiness', true);
  const count = window.to - window.from;
  const spanMs = (tMs[window.to - 1] - window.startMs) / rateScale;
  const rateRps = spanMs > 0 ? (count * 1000) / spanMs : Infinity;
  const next = arrivalClock({ rateRps, burstiness, count }, () => rng.fork(S.arrivals));
  const out = new Float64Array(count);
  for (let i = 0; i < count; i++) out[i] = next();
  return out;
}

function traceFormat(name: string | undefined): TraceFormatName | undefined {
  if (name === undefined || name === 'auto') return undefined;
  const format = TRACE_FORMAT_ALIASES[name] ?? name;
  if (!(TRACE_FORMAT_NAMES as readonly string[]).includes(format)) {
    const names = ['auto', ...TRACE_FORMAT_NAMES, ...Object.keys(TRACE_FORMAT_ALIASES)];
    throw new ConfigError(F.traceFormat, `one of ${names.join(', ')}`, name);
  }
  return format as TraceFormatName;
}

function arrivalKind(opts: WorkloadOptions): ArrivalKind {
  // Burstiness alone implies a gamma process: it means nothing to a Poisson one.
  const kind = opts.arrival ?? (opts.burstiness !== undefined ? 'gamma' : D.arrival);
  if (!ARRIVAL_KINDS.includes(kind))
    throw new ConfigError(F.arrival, ARRIVAL_KINDS.join(' or '), kind);
  return kind;
}

/** A window or format without a trace would be ignored; the user meant something else. */
function rejectTraceOnly(opts: WorkloadOptions): void {
  const set: [keyof WorkloadOptions, boolean][] = [
    ['traceFormat', opts.traceFormat !== undefined && opts.traceFormat !== 'auto'],
    ['startS', opts.startS !== undefined && opts.startS !== 0],
    ['durationS', opts.durationS !== undefined],
  ];
  for (const [key, isSet] of set) {
    if (isSet) throw new ConfigError(F[key], `nothing without ${F.trace}`, opts[key]);
  }
}

function positive(value: number, key: keyof WorkloadOptions, allowInfinity: boolean): number {
  if (typeof value !== 'number' || !(value > 0) || (!allowInfinity && value === Infinity)) {
    throw new ConfigError(F[key], allowInfinity ? 'a number > 0' : 'a finite number > 0', value);
  }
  return value;
}

function nonNegative(value: number, key: keyof WorkloadOptions): number {
  if (typeof value !== 'number' || !(value >= 0) || value === Infinity) {
    throw new ConfigError(F[key], 'a finite number ≥ 0', value);
  }
  return value;
}

function choiceCount(value: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > MAX_CHOICES)
    throw new ConfigError(F.choices, `an integer from 1 to ${MAX_CHOICES}`, value);
  return value;
}

function count(value: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new ConfigError(F.numRequests, 'an integer ≥ 1', value);
  }
  return value;
}
