/** What routing may know of a replica at decision time: the control plane's own counts plus the engine's reported load. */
export interface ReplicaSnapshot {
  readonly index: number;
  /** Requests this control plane dispatched there that have not finished. */
  readonly inFlight: number;
  readonly running: number;
  readonly waiting: number;
  /** KV blocks in use / total, in [0, 1]. */
  readonly kvUsage: number;
  /**
   * On trial (its circuit breaker half-open): it takes one request, then no more until that one
   * has told whether it is healthy again.
   */
  readonly probe?: boolean;
}
