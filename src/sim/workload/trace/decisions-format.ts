/**
 * A decision log read as a trace (`--decisions FILE`, the gateway's or the simulator's): the
 * traffic a fleet was offered, replayed under another policy or fleet (`simulate --trace`), or
 * live against another server (`bench --trace`). One request per id, told by its first
 * decision record (`asked`): it arrives at `arrival_ms` (a gateway's line, on the calendar: its
 * `time` less the wait from arrival to decision), `input_tokens` long, with its tenant,
 * class, `max_tokens`, client deadline (`timeout_ms`), choices and session.
 *
 * How long its reply is, the log knows only of a request served to its end (an outcome record
 * `completed`; of several choices, each their mean). The rest — refused, expired, cut, failed —
 * take in turn the replies of completed requests of their tenant and class (of their class when
 * their tenant has none, of any when their class has none), within their max_tokens: what the
 * same clients asked of the same fleet. One refused before its body was read (`input_tokens`
 * null) takes its prompt's size from the same request as its reply. A log with no completed
 * request cannot say how long any reply is, and is refused. A record of a request that could
 * not be read as one (`asked: null`) is skipped as `unread`, and a retry under an id of its own
 * (its record's `attempt`, a simulated naive client's `id#N`) as `retry`: the replay's client
 * retries as it is told to. A policy reload's line is passed over. A last line that is not
 * JSON was cut as it was written (a gateway killed mid-write, a copy of a log being written):
 * skipped as `cut_last_line`; such a line anywhere else fails the load, at its place.
 */
import { InputError } from '../../../core/errors.ts';
import { MAX_CHOICES } from '../../../core/request/request.ts';
import type { SloClassName } from '../../../core/request/slo-classes.ts';
import type { Ms, Tokens } from '../../../core/request/units.ts';
import {
  fail,
  jsonClass,
  jsonNumber,
  jsonText,
  timestamp,
  tokens,
  type LineRef,
} from './fields.ts';
import { jsonObject, tryJsonObject, type JsonRecord } from './json-line.ts';
import { PART, type RowExtras, type TraceFormat, type TraceRow } from './trace-format.ts';

/**
 * One gateway process's lines, its clock (`arrival_ms`, `at_ms`) put on the calendar: the least
 * `time − at_ms` of its lines, since each line's `time` is stamped as it is written, a few ms
 * after its decision, and varies by that much from line to line; arrivals on the process's own
 * clock keep their order and spacing exactly.
 */
interface Run {
  offsetMs: number;
}

/** A line whose calendar and clock disagree by more than this with its run's began another. */
const NEW_RUN_MS = 1_000;

interface Asked {
  /** On its run's clock, or a simulated log's own. */
  readonly arrivalMs: Ms;
  readonly run?: Run;
  /** Undefined: refused before its body was read. */
  readonly inputTokens?: Tokens;
  readonly tenant: string;
  readonly sloClass: SloClassName;
  readonly maxTokens?: Tokens;
  readonly timeoutMs?: Ms;
  readonly choices?: number;
  readonly session?: string;
  /** The output cap a degraded admission served it under: a reply that reached it was cut. */
  readonly degradedCap?: Tokens;
  /** Each choice's reply, once an outcome says it completed. */
  outputTokens?: Tokens;
}

const isDecision = (o: JsonRecord) => 'request_id' in o && 'admission' in o;
const isOutcome = (o: JsonRecord) => 'request_id' in o && 'outcome' in o;

export const decisionsFormat: TraceFormat = {
  name: 'decisions',
  detect(firstLine) {
    const o = tryJsonObject(firstLine);
    return o !== undefined && (isDecision(o) || isOutcome(o) || o.msg === 'policy_reload');
  },
  open(file) {
    const requests = new Map<string, Asked>();
    let run: Run | undefined;
    /** The run `o` was written in: the last, or a new one where its clock jumped. */
    const runOf = (o: JsonRecord): Run | undefined => {
      if (typeof o.time !== 'number' || typeof o.at_ms !== 'number') return undefined;
      const offsetMs = o.time - o.at_ms;
      if (run === undefined || Math.abs(offsetMs - run.offsetMs) > NEW_RUN_MS) run = { offsetMs };
      else run.offsetMs = Math.min(run.offsetMs, offsetMs);
      return run;
    };
    /** A line that was not JSON: the log's last, cut, unless another follows it. */
    let cut: InputError | undefined;
    const parse = (line: string, lineNo: number) => {
      const at = { file, line: lineNo };
      if (cut !== undefined) throw cut;
      let o: JsonRecord;
      try {
        o = jsonObject(at, line);
      } catch (e) {
        if (!(e instanceof InputError) || parsesAsJson(line)) throw e;
        cut = e;
        return { skip: 'cut_last_line' };
      }
      if (o.msg === 'policy_reload') return PART;
      const id = jsonText(at, 'request_id', o.request_id);
      if (isOutcome(o)) {
        completed(at, o.outcome, requests.get(id));
        return PART;
      }
      if (!isDecision(o)) fail(at, 'admission', 'expected a decision or an outcome record');
      // A later attempt, or the record of a stream cut: the request is told by its first. A
      // retry under an id of its own (a gateway's attempt, a naive client's) is its client's:
      // the replay's client retries as it is told to.
      if (requests.has(id)) return PART;
      if (typeof o.attempt === 'number' && o.attempt > 1) return { skip: 'retry' };
      // The simulator names a naive client's retry after its request: `r000002#2`.
      const first = /^(.+)#\d+$/.exec(id)?.[1];
      if (first !== undefined && requests.has(first)) return { skip: 'retry' };
      if (o.asked === null) return { skip: 'unread' };
      requests.set(id, asked(at, o, runOf(o)));
      return PART;
    };
    return Object.assign(parse, { end: (lineNo: number) => rows(file, lineNo, requests) });
  },
};

function asked(at: LineRef, o: JsonRecord, run: Run | undefined): Asked {
  const a = o.asked;
  if (a === undefined) {
    fail(at, 'asked', 'missing field: a log written before records said what a request asked');
  }
  if (typeof a !== 'object' || a === null) fail(at, 'asked', 'expected an object');
  const r = a as JsonRecord;
  // A gateway's arrival_ms is on its own process's clock; its run's offset (`Run`) puts it on the
  // calendar, so a log that several runs appended to replays each run where it happened, not
  // all of them from 0 at once. A simulated log has no `time`.
  const arrivalMs = timestamp(
    at,
    'asked.arrival_ms',
    jsonNumber(at, 'asked.arrival_ms', r.arrival_ms),
  );
  const field = 'asked.input_tokens';
  const inputTokens =
    r.input_tokens === null ? undefined : tokens(at, field, jsonNumber(at, field, r.input_tokens));
  const choices = o.choices === undefined ? 1 : jsonNumber(at, 'choices', o.choices);
  if (!(Number.isSafeInteger(choices) && choices >= 1 && choices <= MAX_CHOICES)) {
    fail(at, 'choices', `expected an integer from 1 to ${MAX_CHOICES}, got ${choices}`);
  }
  const timeoutMs =
    r.timeout_ms == null ? undefined : jsonNumber(at, 'asked.timeout_ms', r.timeout_ms);
  if (timeoutMs !== undefined && !(timeoutMs > 0)) {
    fail(at, 'asked.timeout_ms', `expected milliseconds above 0, got ${timeoutMs}`);
  }
  const maxField = 'asked.max_tokens';
  const admission = o.admission as JsonRecord | null;
  const cap = typeof admission === 'object' ? admission?.degraded_max_tokens : undefined;
  return {
    ...(typeof cap === 'number' ? { degradedCap: cap } : {}),
    ...(o.session === undefined ? {} : { session: jsonText(at, 'session', o.session) }),
    arrivalMs,
    ...(run === undefined ? {} : { run }),
    ...(inputTokens === undefined ? {} : { inputTokens }),
    tenant: jsonText(at, 'tenant', o.tenant),
    sloClass: jsonClass(at, 'class', o.class),
    ...(r.max_tokens == null
      ? {}
      : { maxTokens: tokens(at, maxField, jsonNumber(at, maxField, r.max_tokens)) }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(choices > 1 ? { choices } : {}),
  };
}

/** An outcome: a request that completed has its reply's length, each choice's the mean. */
function completed(at: LineRef, value: unknown, req: Asked | undefined): void {
  if (typeof value !== 'object' || value === null) fail(at, 'outcome', 'expected an object');
  const outcome = value as JsonRecord;
  if (req === undefined || outcome.state !== 'completed') return;
  const field = 'outcome.output_tokens';
  const total = tokens(at, field, jsonNumber(at, field, outcome.output_tokens), 0);
  const each = Math.max(1, Math.round(total / (req.choices ?? 1)));
  // Cut at the cap a degraded admission set: its own length is unknown, as a refused one's.
  if (req.degradedCap !== undefined && each >= req.degradedCap) return;
  req.outputTokens = each;
}

/**
 * The requests in the order first told: each its own reply, or one of a completed request like
 * it, taken in turn — with that request's prompt size too, for one never read.
 */
function rows(file: string, lineNo: number, requests: ReadonlyMap<string, Asked>): TraceRow[] {
  const lenders = new Map<string, Asked[]>();
  const lend = (key: string, r: Asked) => {
    const list = lenders.get(key);
    if (list === undefined) lenders.set(key, [r]);
    else list.push(r);
  };
  const keysOf = (r: Asked) => [`${r.sloClass}\u0000${r.tenant}`, r.sloClass, ''];
  for (const r of requests.values()) {
    if (r.outputTokens === undefined || r.inputTokens === undefined) continue;
    for (const key of keysOf(r)) lend(key, r);
  }
  if (!lenders.has('') && requests.size > 0) {
    throw new InputError(
      file,
      lineNo,
      'trace',
      'no request in this log was served to its end, so no reply length is known to replay',
    );
  }
  const turns = new Map<string, number>();
  const lender = (r: Asked): Asked => {
    const key = keysOf(r).find((k) => lenders.has(k)) ?? '';
    const list = lenders.get(key) ?? [];
    const turn = turns.get(key) ?? 0;
    turns.set(key, turn + 1);
    return list[turn % list.length];
  };
  return [...requests.values()].map((r) => {
    const like = r.outputTokens === undefined || r.inputTokens === undefined ? lender(r) : r;
    const inputTokens = r.inputTokens ?? (like.inputTokens as Tokens);
    const own = r.outputTokens ?? (like.outputTokens as Tokens);
    const outputTokens = r.maxTokens === undefined ? own : Math.min(own, r.maxTokens);
    const tMs = (r.run?.offsetMs ?? 0) + r.arrivalMs;
    return { tMs, inputTokens, outputTokens, extras: extrasOf(r) };
  });
}

function extrasOf(r: Asked): RowExtras {
  return {
    tenant: r.tenant,
    sloClass: r.sloClass,
    ...(r.maxTokens === undefined ? {} : { maxTokens: r.maxTokens }),
    ...(r.timeoutMs === undefined ? {} : { timeoutMs: r.timeoutMs }),
    ...(r.choices === undefined ? {} : { choices: r.choices }),
    ...(r.session === undefined ? {} : { session: r.session }),
  };
}

/** Whether `line` is whole JSON (of any kind): one that is not was cut, or never was JSON. */
function parsesAsJson(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}
