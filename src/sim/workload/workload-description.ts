/**
 * What a built workload is, for the simulation report: plain, JSON-ready data with a fixed key
 * order, so the same options give a byte-identical description.
 */
import type { ArrivalKind, TraceFormatName } from './workload-options.ts';

export interface SyntheticDescription {
  readonly kind: 'synthetic';
  readonly arrival: ArrivalKind;
  /** Mean requests per second offered, after `rateScale`. */
  readonly rateRps: number;
  readonly burstiness: number;
  readonly numRequests: number;
  /** Time of the last arrival: arrivals are rescaled to end at exactly N / rate. */
  readonly durationS: number;
  readonly input: string;
  readonly output: string;
  /** Input and output drawn together from one row of a length table. */
  readonly jointLengths: boolean;
  readonly tenants: string;
  readonly classes: string;
  /** Agent tool calls per request, when any (`N:WAIT_MS:RESULT_TOKENS`). */
  readonly toolCalls?: string;
  /** A prefix-heavy mix (`--prefix`): prompts from its structure, not from `input`. */
  readonly prefix?: string;
}

export interface TraceDescription {
  readonly kind: 'trace';
  readonly file: string;
  readonly format: TraceFormatName;
  readonly formatDetected: boolean;
  /** Data rows in the file, skipped ones included. */
  readonly rowsRead: number;
  /** Rows skipped on purpose, by reason (BurstGPT `failed`, `emptyPrompt`). */
  readonly rowsSkipped: Readonly<Record<string, number>>;
  /** Rows that were out of time order in the file and were sorted into place. */
  readonly rowsReordered: number;
  /** From the first to the last request of the whole trace, seconds of trace time. */
  readonly traceSpanS: number;
  /** The window cut, in seconds of trace time before scaling; null duration runs to the end. */
  readonly window: { readonly startS: number; readonly durationS: number | null };
  readonly rateScale: number;
  /** Null: recorded times; else the process the window's requests were re-timed by. */
  readonly retimed: { readonly arrival: 'gamma'; readonly burstiness: number } | null;
  readonly numRequests: number;
  readonly firstArrivalMs: number;
  readonly lastArrivalMs: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Specs applied to rows that carry no tenant or class of their own. */
  readonly tenants: string;
  readonly classes: string;
  /** The most choices a row of the window asks for (native `n`), when more than one. */
  readonly maxChoices?: number;
}

/** The LoRA adapters its requests ask for (`--adapters`), when any. */
export type WorkloadDescription = (SyntheticDescription | TraceDescription) & {
  readonly adapters?: string;
  /** The load shape its arrivals were re-timed to (`--scenario`), and the span it was laid over. */
  readonly scenario?: { readonly name: string; readonly spanS: number; readonly burstAtS: number };
  /** Choices each request asks for (`--n`), when more than one. */
  readonly choices?: number;
};
