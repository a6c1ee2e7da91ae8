/**
 * What a client may tell the gateway beside the OpenAI body, in headers: the class it asks for
 * (`x-goodput-class`; the policy decides whether it is granted), its deadline
 * (`x-goodput-timeout-ms`, relative, or `x-goodput-deadline-ms`, absolute Unix ms — the same on
 * every attempt), its `Idempotency-Key`, and the attempt number (`x-goodput-attempt`). Each bad
 * value is refused naming the header and the value.
 */
import { isSloClassName, type SloClassName } from '../../core/request/slo-classes.ts';
import { describeValue, invalidRequest } from '../../openai/index.ts';

export interface ClientHeaders {
  readonly sloClass?: SloClassName;
  /** Absolute deadline, Unix ms. */
  readonly deadlineEpochMs?: number;
  readonly idempotencyKey?: string;
  readonly attempt: number;
}

const KEY = /^[\x21-\x7e]{1,255}$/;

function positiveNumber(name: string, raw: string): number {
  const v = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(v) || v <= 0) {
    throw invalidRequest(`${name}: expected a positive number, got ${describeValue(raw)}`, name);
  }
  return v;
}

export function parseClientHeaders(headers: Headers, nowEpochMs: number): ClientHeaders {
  const cls = headers.get('x-goodput-class');
  if (cls !== null && !isSloClassName(cls)) {
    throw invalidRequest(
      `x-goodput-class: expected one of interactive, reasoning, batch, best_effort, got ${describeValue(cls)}`,
      'x-goodput-class',
    );
  }
  const key = headers.get('idempotency-key');
  if (key !== null && !KEY.test(key)) {
    throw invalidRequest(
      `Idempotency-Key: expected 1–255 visible ASCII characters, got ${describeValue(key)}`,
      'Idempotency-Key',
    );
  }
  const attemptRaw = headers.get('x-goodput-attempt');
  let attempt = 1;
  if (attemptRaw !== null) {
    attempt = positiveNumber('x-goodput-attempt', attemptRaw);
    if (!Number.isInteger(attempt)) {
      throw invalidRequest(
        `x-goodput-attempt: expected an integer ≥ 1, got ${describeValue(attemptRaw)}`,
      );
    }
  }
  const absolute = headers.get('x-goodput-deadline-ms');
  const relative = headers.get('x-goodput-timeout-ms');
  let deadlineEpochMs: number | undefined;
  if (absolute !== null) deadlineEpochMs = positiveNumber('x-goodput-deadline-ms', absolute);
  else if (relative !== null)
    deadlineEpochMs = nowEpochMs + positiveNumber('x-goodput-timeout-ms', relative);
  return {
    sloClass: cls === null ? undefined : cls,
    deadlineEpochMs,
    idempotencyKey: key ?? undefined,
    attempt,
  };
}
