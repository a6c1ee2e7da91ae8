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
   * LoRA adapters resident in its GPU slots (vLLM's `lora_requests_info` running adapters);
   * undefined when it reports none or serves none.
   */
  readonly loras?: readonly string[];
  /** LoRA adapters it serves at all; undefined: every adapter the fleet serves. */
  readonly servable?: readonly string[];
  /** Share of its recent attempts that failed, 0–1, when the host tracks it. */
  readonly failureRate?: number;
  /**
   * On trial (its circuit breaker half-open): it takes one request, then no more until that one
   * has told whether it is healthy again.
   */
  readonly probe?: boolean;
  /**
   * Disaggregated serving: the prompts its prefill pool has still to compute, in steps of that
   * pool — pending prompt tokens over (prefill replicas × a step's token budget).
   */
  readonly prefillBacklogSteps?: number;
}

/** Whether `r` serves `adapter`; a request for the base model (no adapter) goes anywhere. */
export function serves(r: ReplicaSnapshot, adapter: string | undefined): boolean {
  return adapter === undefined || r.servable === undefined || r.servable.includes(adapter);
}

/** The replicas that serve `adapter`: `replicas` itself when every one does (or none is asked). */
export function servingOnly(
  replicas: readonly ReplicaSnapshot[],
  adapter: string | undefined,
): readonly ReplicaSnapshot[] {
  return adapter === undefined || replicas.every((r) => serves(r, adapter))
    ? replicas
    : replicas.filter((r) => serves(r, adapter));
}
