/**
 * What a client may tell the gateway beside the OpenAI body, in headers: the class it asks for
 * (`x-goodput-class`; the policy decides whether it is granted), its deadline
 * (`x-goodput-timeout-ms`, relative, or `x-goodput-deadline-ms`, absolute Unix ms — the same on
 * every attempt), its `Idempotency-Key`, the attempt number (`x-goodput-attempt`, else the OpenAI
 * SDKs' own `x-stainless-retry-count` + 1), and the
 * conversation it belongs to (`x-session-id`, or its alias `x-goodput-session`: routing keeps a
 * session near its cached history). The Gateway API Inference Extension's headers, and llm-d's
 * spellings of them, are aliases: its inference objective names the class, its fairness id the
 * tenant (`tenantFor`), and its TTFT and TPOT objectives are read as the request's own targets —
 * checked and recorded on its trace, never enforced: the objectives a request is judged by are
 * its class's. Each bad value is refused naming the header, the value and the limit, and a header
 * and an alias that disagree are refused naming both. A deadline lies at most
 * `MAX_DEADLINE_MS` (24 h) ahead — past that a request is not one a deadline is for, and timers
 * cannot hold it; an absolute deadline already passed is not an error here but an outcome: the
 * request is refused as `deadline_exceeded`.
 */
import type { TenantDirectory } from '../../core/config/tenant-schema.ts';
import { isSloClassName, type SloClassName } from '../../core/request/slo-classes.ts';
import type { Ms } from '../../core/request/units.ts';
import { describeValue, invalidRequest } from '../../openai/index.ts';

export interface ClientHeaders {
  readonly sloClass?: SloClassName;
  /** The header that named `sloClass`. */
  readonly classHeader?: string;
  /** Absolute deadline, Unix ms. */
  readonly deadlineEpochMs?: number;
  readonly idempotencyKey?: string;
  readonly attempt: number;
  /**
   * The attempt is the SDK's count: a retry it makes of itself, after the Retry-After it was
   * told. Counted as a retry, but not charged to the retry budget, which guards against retries
   * nobody invited (bench/RESULTS.md: charged, they were refused by the thousand at a burst).
   */
  readonly sdkRetry: boolean;
  readonly session?: string;
  /** The tenant a fairness id names, and the header that named it (see `tenantFor`). */
  readonly fairness?: { readonly header: string; readonly id: string };
  /** The client's own latency targets, when it sent them: recorded, not enforced. */
  readonly targets?: { readonly ttftMs?: Ms; readonly tpotMs?: Ms };
}

/** The furthest a deadline may lie ahead: 24 hours. */
export const MAX_DEADLINE_MS = 86_400_000;
/** The highest attempt number taken: far past any retry policy, well inside an integer. */
export const MAX_ATTEMPT = 1_000;

/**
 * Each header Goodput reads under more than one name, its own first: the Gateway API Inference
 * Extension's (`x-gateway-…`, `x-slo-…`), then llm-d's current spelling of the same.
 */
export const CLASS_HEADERS = [
  'x-goodput-class',
  'x-gateway-inference-objective',
  'x-llm-d-router-inference-objective',
] as const;
const SESSION_HEADERS = ['x-session-id', 'x-goodput-session'] as const;
const FAIRNESS_HEADERS = [
  'x-gateway-inference-fairness-id',
  'x-llm-d-router-inference-fairness-id',
] as const;
const TTFT_HEADERS = ['x-slo-ttft-ms', 'x-llm-d-router-slo-ttft-ms'] as const;
const TPOT_HEADERS = ['x-slo-tpot-ms', 'x-llm-d-router-slo-tpot-ms'] as const;

const KEY = /^[\x21-\x7e]{1,255}$/;
const CLASSES = 'one of interactive, reasoning, batch, best_effort';

type Header = (name: string) => string | null;

/** A header's number is written in decimal: `Number` would also read `0x10`, `0b11` and `1e3`. */
const DECIMAL = /^\s*(?:\d+(?:\.\d*)?|\.\d+)\s*$/;

function numberIn(name: string, raw: string, lo: number, hi: number, what: string): number {
  const v = Number(raw);
  if (!DECIMAL.test(raw) || v < lo || v > hi) {
    throw invalidRequest(
      `${name}: expected ${what}, got ${describeValue(raw)}`,
      name,
      'invalid_value',
    );
  }
  return v;
}

function visible(name: string, raw: string): string {
  if (!KEY.test(raw)) {
    throw invalidRequest(
      `${name}: expected 1–255 visible ASCII characters, got ${describeValue(raw)}`,
      name,
      'invalid_value',
    );
  }
  return raw;
}

function sloClass(name: string, raw: string): SloClassName {
  if (!isSloClassName(raw)) {
    const message = `${name}: expected ${CLASSES}, got ${describeValue(raw)}`;
    throw invalidRequest(message, name, 'invalid_value');
  }
  return raw;
}

function targetMs(name: string, raw: string): number {
  return numberIn(
    name,
    raw,
    Number.MIN_VALUE,
    MAX_DEADLINE_MS,
    `milliseconds in (0, ${MAX_DEADLINE_MS}]`,
  );
}

/**
 * The value one of `names` gives, read by `read` (which refuses a bad one naming its header);
 * two that give different values are refused naming both. Undefined when none is sent.
 */
function given<T>(
  header: Header,
  names: readonly string[],
  read: (name: string, raw: string) => T,
): { readonly header: string; readonly value: T } | undefined {
  let found: { header: string; raw: string; value: T } | undefined;
  for (const name of names) {
    const raw = header(name);
    if (raw === null) continue;
    const value = read(name, raw);
    if (found === undefined) found = { header: name, raw, value };
    else if (value !== found.value) {
      throw invalidRequest(
        `${found.header} (${describeValue(found.raw)}) and ${name} (${describeValue(raw)}) disagree: send one of them, or the same value in both`,
        name,
        'conflicting_headers',
      );
    }
  }
  return found;
}

/**
 * The attempt number: `x-goodput-attempt`, else the retries the OpenAI SDKs (and every other
 * Stainless-made SDK) count in `x-stainless-retry-count` — 0 on a first attempt — plus one, so a
 * stock client's automatic retries are counted as retries (`sdkRetry`).
 */
function attemptOf(header: Header): { readonly attempt: number; readonly sdkRetry: boolean } {
  const declared = header('x-goodput-attempt');
  if (declared !== null)
    return { attempt: wholeIn('x-goodput-attempt', declared, 1), sdkRetry: false };
  const retries = header('x-stainless-retry-count');
  const attempt = retries === null ? 1 : wholeIn('x-stainless-retry-count', retries, 0) + 1;
  return { attempt, sdkRetry: attempt > 1 };
}

/**
 * The attempt a request declares, read alone and leniently: a shed request's, whose headers are
 * judged no further (a bad value counts it a first attempt).
 */
export function declaredAttempt(header: Header): number {
  try {
    return attemptOf(header).attempt;
  } catch {
    return 1;
  }
}

/** An integer header in [`lo`, `lo` + MAX_ATTEMPT − 1]. */
function wholeIn(name: string, raw: string, lo: number): number {
  const what = `an integer in [${lo}, ${lo + MAX_ATTEMPT - 1}]`;
  const v = numberIn(name, raw, lo, lo + MAX_ATTEMPT - 1, what);
  if (!Number.isInteger(v)) {
    throw invalidRequest(
      `${name}: expected ${what}, got ${describeValue(raw)}`,
      name,
      'invalid_value',
    );
  }
  return v;
}

/** `header`: a header's value by lowercase name, null when absent. */
export function parseClientHeaders(header: Header, nowEpochMs: number): ClientHeaders {
  const cls = given(header, CLASS_HEADERS, sloClass);
  const key = header('idempotency-key');
  if (key !== null) visible('Idempotency-Key', key);
  const session = given(header, SESSION_HEADERS, visible)?.value;
  const fairness = given(header, FAIRNESS_HEADERS, visible);
  const ttftMs = given(header, TTFT_HEADERS, targetMs)?.value;
  const tpotMs = given(header, TPOT_HEADERS, targetMs)?.value;
  const { attempt, sdkRetry } = attemptOf(header);
  const absolute = header('x-goodput-deadline-ms');
  const relative = header('x-goodput-timeout-ms');
  let deadlineEpochMs: number | undefined;
  if (absolute !== null) {
    const latest = nowEpochMs + MAX_DEADLINE_MS;
    const what = `a Unix time in ms no later than 24 h from now (${Math.floor(latest)})`;
    deadlineEpochMs = numberIn('x-goodput-deadline-ms', absolute, 0, latest, what);
  } else if (relative !== null) {
    const what = `milliseconds in (0, ${MAX_DEADLINE_MS}] (24 h)`;
    const ms = numberIn('x-goodput-timeout-ms', relative, Number.MIN_VALUE, MAX_DEADLINE_MS, what);
    deadlineEpochMs = nowEpochMs + ms;
  }
  return {
    sloClass: cls?.value,
    classHeader: cls?.header,
    deadlineEpochMs,
    idempotencyKey: key ?? undefined,
    attempt,
    sdkRetry,
    session,
    fairness: fairness === undefined ? undefined : { header: fairness.header, id: fairness.value },
    targets: ttftMs === undefined && tpotMs === undefined ? undefined : { ttftMs, tpotMs },
  };
}

/**
 * The headers that tell `h` again to another replica, which reads them as this one did (a
 * background response handed over at a drain, background-handover.ts): its class, its deadline
 * (as absolute), attempt, session and targets. Not its Idempotency-Key, whose answer was given
 * here, nor its fairness id: the tenant goes with it, resolved.
 */
export function restated(h: ClientHeaders): Record<string, string> {
  const told: Record<string, string> = {};
  if (h.sloClass !== undefined) told['x-goodput-class'] = h.sloClass;
  if (h.deadlineEpochMs !== undefined) told['x-goodput-deadline-ms'] = String(h.deadlineEpochMs);
  if (h.sdkRetry) told['x-stainless-retry-count'] = String(h.attempt - 1);
  else if (h.attempt !== 1) told['x-goodput-attempt'] = String(h.attempt);
  if (h.session !== undefined) told['x-session-id'] = h.session;
  if (h.targets?.ttftMs !== undefined) told['x-slo-ttft-ms'] = String(h.targets.ttftMs);
  if (h.targets?.tpotMs !== undefined) told['x-slo-tpot-ms'] = String(h.targets.tpotMs);
  return told;
}

/**
 * The class a request asks for, read leniently (a request shed before it is read is counted in
 * it): the first of the class headers that names one, else undefined.
 */
export function askedClass(header: Header): SloClassName | undefined {
  for (const name of CLASS_HEADERS) {
    const v = header(name);
    if (v !== null && isSloClassName(v)) return v;
  }
  return undefined;
}

/**
 * The tenant a request speaks for, given the one its API key (or the lack of keys) made it and
 * the fairness id it sent, if any. Goodput's tenants are the policy's: with keys, a fairness id
 * must name the key's own tenant; without, it names a tenant the policy lists, or `default` —
 * a client never makes up a tenant (each would hold counters of its own for good).
 */
export function tenantFor(
  authenticated: string,
  fairness: ClientHeaders['fairness'],
  keysRequired: boolean,
  tenants: TenantDirectory,
): string {
  if (fairness === undefined) return authenticated;
  const { header, id } = fairness;
  if (keysRequired && id !== authenticated) {
    throw invalidRequest(
      `${header}: ${describeValue(id)} is not the tenant of the API key (${describeValue(authenticated)}); send the key's tenant, or no ${header}`,
      header,
      'conflicting_headers',
    );
  }
  if (id !== 'default' && !tenants.named.has(id)) {
    throw invalidRequest(
      `${header}: expected a tenant the policy lists, or default, got ${describeValue(id)}`,
      header,
      'invalid_value',
    );
  }
  return id;
}
