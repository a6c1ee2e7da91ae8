/**
 * Why the gateway stopped a request before its end, as the abort reason of the signal that
 * stops it in the queue and upstream. Each cause is an outcome of its own — HTTP status, SSE
 * error code, `x-goodput-reason`, metric label, decision record — and none is a backend's
 * failure: a breaker never counts it.
 */
export type StopCause =
  /** The client went away (closed the connection, stopped reading). */
  | 'client_closed'
  /** The client's own deadline (`x-goodput-timeout-ms` / `x-goodput-deadline-ms`) passed. */
  | 'deadline_exceeded'
  /** The gateway is shutting down and its drain time ran out. */
  | 'shutting_down'
  /**
   * A background response still queued when its gateway began to drain, handed to another
   * replica to run (background-handover.ts): it goes on there, so it has not ended.
   */
  | 'handed_over';

export class RequestStopped extends Error {
  readonly kind = 'stopped' as const;
  readonly why: StopCause;

  constructor(why: StopCause) {
    super(`request stopped: ${why}`);
    this.name = 'RequestStopped';
    this.why = why;
  }
}

export function isRequestStopped(e: unknown): e is RequestStopped {
  return e instanceof RequestStopped;
}

/** What stopped the request `signal` belongs to; undefined while it runs. */
export function stoppedBy(signal: AbortSignal): StopCause | undefined {
  if (!signal.aborted) return undefined;
  return isRequestStopped(signal.reason) ? signal.reason.why : 'client_closed';
}
