// What the live benches of kept turns share: a client's streaming request, keyed or not, timed to
// its first token, and how its answer says whether its turn is kept; and a run's tally.
import { metric } from './live-processes.ts';

export const TTFT_MS = 2_000;

export const body = JSON.stringify({
  model: 'llama-3-8b',
  messages: [
    { role: 'system', content: 'You are a senior support engineer for a cloud storage product.' },
    { role: 'user', content: 'Our nightly backup job started failing three days ago. Why?' },
  ],
  stream: true,
  max_tokens: 256,
});

export interface Attempt {
  readonly status: number;
  readonly kept: boolean;
  readonly retryAfterMs: number;
  /** A refusal's reason (`x-goodput-reason`). */
  readonly reason: string | null;
  /** A 200's time to first token from its send, as this client timed it. */
  readonly ttftMs?: number;
}

/** The streaming request, with `key` (none: sent without one) as its `attempt`-th. */
export async function send(url: string, key: string | undefined, attempt = 1): Promise<Attempt> {
  const sent = performance.now();
  const keyed = key === undefined ? {} : { 'idempotency-key': key };
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...keyed,
      'x-goodput-attempt': String(attempt),
    },
    body,
  });
  let ttftMs: number | undefined;
  for await (const chunk of res.body ?? []) {
    const text = Buffer.from(chunk as Uint8Array).toString();
    if (ttftMs === undefined && res.status === 200 && text.includes('"content"')) {
      ttftMs = performance.now() - sent;
    }
  }
  return {
    status: res.status,
    kept: res.headers.get('x-goodput-turn') === 'kept',
    retryAfterMs: Number(res.headers.get('retry-after-ms') ?? NaN),
    reason: res.headers.get('x-goodput-reason'),
    ttftMs,
  };
}

/** `n` of `of`, with its share. */
export function share(n: number, of: number): string {
  return of === 0 ? '–' : `${n}/${of} (${((100 * n) / of).toFixed(1)}%)`;
}

/** A keyed client's first attempt, and its retry when it was refused with a Retry-After. */
export interface Keyed {
  readonly first: Attempt;
  readonly retry?: Attempt;
}

/**
 * A run's tally: the keyed requests refused and retried, the retries admitted (at a kept turn,
 * and with none), admitted retries over the TTFT as their client timed it, and what the gateways
 * counted over the run (their /metrics `before` and `after`, summed) in `durationS`.
 */
export function tally(
  results: readonly Keyed[],
  before: readonly string[],
  after: readonly string[],
  durationS: number,
) {
  const grew = (name: string, labels: Record<string, string> = {}) =>
    after.reduce(
      (sum, text, i) => sum + metric(text, name, labels) - metric(before[i], name, labels),
      0,
    );
  const retried = results.filter((r) => r.retry !== undefined);
  const atTurn = retried.filter((r) => r.first.kept);
  const noTurn = retried.filter((r) => !r.first.kept);
  const admitted = (rs: readonly Keyed[]) => rs.filter((r) => r.retry?.status === 200);
  const late = admitted(retried).filter((r) => (r.retry?.ttftMs ?? Infinity) > TTFT_MS);
  return {
    refused: retried.length,
    atTurn: share(admitted(atTurn).length, atTurn.length),
    noTurn: share(admitted(noTurn).length, noTurn.length),
    late: late.length,
    goodPerS: grew('goodput_good_requests_total') / durationS,
    admittedExpired: grew('goodput_admission_decisions_total', { outcome: 'expire' }),
    kept: grew('goodput_kept_turns_total'),
    claimed: grew('goodput_kept_turns_ended_total', { outcome: 'claimed' }),
  };
}
