/**
 * What one benchmark request did, as the client saw it: when it was due and sent, the times of
 * its token chunks, what the server said it used, and, for a failure, the status and reason.
 * Times are on the load generator's clock. A record is plain data, so a run's records can be
 * summarised (bench-metrics.ts) or drawn (the HTML report) without the network.
 */
export interface CallRecord {
  readonly id: string;
  readonly tenant: string;
  readonly sloClass: string;
  /** When the workload said to send it (clock ms). */
  readonly dueMs: number;
  /** When it was sent: later than due when the generator fell behind or a concurrency cap held it. */
  readonly sentMs: number;
  /** When the answer ended: its last byte, or the failure. */
  readonly endMs: number;
  readonly ok: boolean;
  /** HTTP status; 0 when no answer came (refused connection, reset, timeout). */
  readonly status: number;
  /** For a failure: the server's `x-goodput-reason` or error code, or the transport's error code. */
  readonly reason?: string;
  /** For a failure: the server's or transport's message, shortened. */
  readonly error?: string;
  /** The server's id for it (`x-goodput-request-id`), so it can be found in the server's logs. */
  readonly serverId?: string;
  /** Clock ms of each chunk that carried tokens. */
  readonly tokenTimesMs: readonly number[];
  /** A request for several choices (`n`): the choice each of those chunks belonged to. */
  readonly tokenChoices?: readonly number[];
  /** Prompt tokens: the server's usage when it gave one, else what was sent. */
  readonly promptTokens: number;
  /** Output tokens: the server's usage when it gave one, else the token chunks counted. */
  readonly outputTokens: number;
}
