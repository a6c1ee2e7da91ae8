/**
 * What `goodput simulate` may say about its workload, the defaults, and the option names that
 * errors quote. A synthetic workload reads the arrival and length options; a trace reads the
 * window and format options and ignores the synthetic ones (callers fill every option with its
 * default, so a trace cannot tell a default rate from a chosen one). Window and format options
 * without a trace are rejected: `--duration 60` on a synthetic run would otherwise be ignored.
 */
export type ArrivalKind = 'poisson' | 'gamma';
export const ARRIVAL_KINDS: readonly ArrivalKind[] = ['poisson', 'gamma'];

export type TraceFormatName = 'azure' | 'mooncake' | 'burstgpt' | 'native' | 'decisions';
export const TRACE_FORMAT_NAMES: readonly TraceFormatName[] = [
  'azure',
  'mooncake',
  'burstgpt',
  'native',
  'decisions',
];

/** Other names accepted for `traceFormat`. */
export const TRACE_FORMAT_ALIASES: Readonly<Record<string, TraceFormatName>> = { jsonl: 'native' };

export interface WorkloadOptions {
  /** Path of a trace file; without it the workload is synthetic. */
  readonly trace?: string;
  /** Overrides format detection: a TraceFormatName or `jsonl` (= native); `auto` detects. */
  readonly traceFormat?: string;
  /** Synthetic only. */
  readonly arrival?: ArrivalKind;
  /** Synthetic only: mean requests per second (Infinity sends all at time 0). */
  readonly rate?: number;
  /** Synthetic only: gamma shape; 1 is Poisson, below 1 burstier. */
  readonly burstiness?: number;
  /** Synthetic only: how many requests. */
  readonly numRequests?: number;
  /** Synthetic only: input length spec, e.g. `uniform:100:2000`. */
  readonly input?: string;
  /** Synthetic only: output length spec. */
  readonly output?: string;
  /** Multiplies the arrival rate: trace times are divided by it, a synthetic rate multiplied. */
  readonly rateScale?: number;
  /** Trace only: window start, seconds of trace time from its first request, before scaling. */
  readonly startS?: number;
  /** Trace only: window length, seconds of trace time, before scaling. */
  readonly durationS?: number;
  /** `default`, any single name, or `zipf:N:S`; traces use it for rows without a tenant. */
  readonly tenants?: string;
  /** A class, or a mix `interactive:0.7,batch:0.3`; traces use it for rows without a class. */
  readonly classes?: string;
  /** Synthetic only: agent tool calls, `N:WAIT_MS:RESULT_TOKENS` (see tool-call-spec.ts). */
  readonly toolCalls?: string;
  /** Synthetic only: a prefix-heavy mix, `mix` or `chat:W,hot:W,docs:W` (prefix-workload.ts). */
  readonly prefix?: string;
  /** LoRA adapters the requests ask for, `zipf:N:S` (adapter-spec.ts). */
  readonly adapters?: string;
  /** Re-times the arrivals to a load shape, `diurnal-burst` (load-scenario.ts). */
  readonly scenario?: string;
  /** Choices each request asks for (OpenAI's `n`, 1 to 128), every one its output long. */
  readonly choices?: number;
}

export const WORKLOAD_DEFAULTS = {
  arrival: 'poisson',
  rate: 10,
  burstiness: 1,
  numRequests: 1000,
  input: 'sharegpt-sarathi',
  output: 'sharegpt-sarathi',
  rateScale: 1,
  startS: 0,
  tenants: 'default',
  classes: 'interactive',
} as const satisfies WorkloadOptions;

/** The command-line spelling of each option; ConfigError paths use these. */
export const WORKLOAD_FLAGS: Readonly<Record<keyof WorkloadOptions, string>> = {
  trace: '--trace',
  traceFormat: '--trace-format',
  arrival: '--arrival',
  rate: '--rate',
  burstiness: '--burstiness',
  numRequests: '--num-requests',
  input: '--input',
  output: '--output',
  rateScale: '--rate-scale',
  startS: '--start',
  durationS: '--duration',
  tenants: '--tenants',
  classes: '--classes',
  toolCalls: '--tool-calls',
  prefix: '--prefix',
  adapters: '--adapters',
  scenario: '--scenario',
  choices: '--n',
};
