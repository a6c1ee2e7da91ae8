/**
 * What a client may tell the gateway beside the OpenAI body, in headers: the class it asks for
 * (`x-goodput-class`; the policy decides whether it is granted), its deadline
 * (`x-goodput-timeout-ms`, relative, or `x-goodput-deadline-ms`, absolute Unix ms — the same on
 * every attempt), its `Idempotency-Key`, the attempt number (`x-goodput-attempt`), and the
 * conversation it belongs to (`x-session-id`, or its alias `x-goodput-session`: routing keeps a
 * session near its cached history). Each bad
 * value is refused naming the header, the value and the limit. A deadline lies at most
 * `MAX_DEADLINE_MS` (24 h) ahead — past that a request is not one a deadline is for, and timers
 * cannot hold it; an absolute deadline already passed is not an error here but an outcome: the
 * request is refused as `deadline_exceeded`.
 */
import { isSloClassName, type SloClassName } from '../../core/request/slo-classes.ts';
import { describeValue, invalidRequest } from '../../openai/index.ts';

export interface ClientHeaders {
  readonly sloClass?: SloClassName;
  /** Absolute deadline, Unix ms. */
  readonly deadlineEpochMs?: number;
  readonly idempotencyKey?: string;
  readonly attempt: number;
  readonly session?: string;
}

/** The furthest a deadline may lie ahead: 24 hours. */
export const MAX_DEADLINE_MS = 86_400_000;
/** The highest attempt number taken: far past any retry policy, well inside an integer. */
export const MAX_ATTEMPT = 1_000;

const KEY = /^[\x21-\x7e]{1,255}$/;

function numberIn(name: string, raw: string, lo: number, hi: number, what: string): number {
  const v = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(v) || v < lo || v > hi) {
    throw invalidRequest(
      `${name}: expected ${what}, got ${describeValue(raw)}`,
      name,
      'invalid_value',
    );
  }
  return v;
}

/** `header`: a header's value by lowercase name, null when absent. */
export function parseClientHeaders(
  header: (name: string) => string | null,
  nowEpochMs: number,
): ClientHeaders {
  const cls = header('x-goodput-class');
  if (cls !== null && !isSloClassName(cls)) {
    throw invalidRequest(
      `x-goodput-class: expected one of interactive, reasoning, batch, best_effort, got ${describeValue(cls)}`,
      'x-goodput-class',
      'invalid_value',
    );
  }
  const key = header('idempotency-key');
  if (key !== null && !KEY.test(key)) {
    throw invalidRequest(
      `Idempotency-Key: expected 1–255 visible ASCII characters, got ${describeValue(key)}`,
      'Idempotency-Key',
      'invalid_value',
    );
  }
  const sessionHeader = header('x-session-id') === null ? 'x-goodput-session' : 'x-session-id';
  const session = header(sessionHeader);
  if (session !== null && !KEY.test(session)) {
    throw invalidRequest(
      `${sessionHeader}: expected 1–255 visible ASCII characters, got ${describeValue(session)}`,
      sessionHeader,
      'invalid_value',
    );
  }
  const attemptRaw = header('x-goodput-attempt');
  let attempt = 1;
  if (attemptRaw !== null) {
    const what = `an integer in [1, ${MAX_ATTEMPT}]`;
    attempt = numberIn('x-goodput-attempt', attemptRaw, 1, MAX_ATTEMPT, what);
    if (!Number.isInteger(attempt)) {
      throw invalidRequest(
        `x-goodput-attempt: expected ${what}, got ${describeValue(attemptRaw)}`,
        'x-goodput-attempt',
        'invalid_value',
      );
    }
  }
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
    sloClass: cls === null ? undefined : cls,
    deadlineEpochMs,
    idempotencyKey: key ?? undefined,
    attempt,
    session: session ?? undefined,
  };
}
