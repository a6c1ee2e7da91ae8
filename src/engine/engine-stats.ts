/**
 * Counters a replica keeps about its own work: plain data, cheap to bump on the hot path,
 * summed across replicas by whoever reports them.
 */
import type { Ms, Tokens } from '../core/request/units.ts';

export interface EngineStats {
  steps: number;
  /** Σ step durations: the replica's busy time. */
  busyMs: Ms;
  preemptions: number;
  preemptionsRecompute: number;
  preemptionsSwap: number;
  /** Compute-only preemptions: a lower-priority sequence gave its seat, keeping its KV. */
  preemptionsKeep: number;
  /** Decodes that sat a step out over the per-iteration decode token budget. */
  decodesDeferred: number;
  /** Blocks moved over the host link, out and in. */
  swapTransferBlocks: number;
  /** Tokens whose KV a recompute preemption threw away (computed again on readmission). */
  recomputedTokens: Tokens;
  /** Pauses for tool calls, by what happened to their KV, and the time spent paused. */
  toolPausesKeep: number;
  toolPausesSwap: number;
  toolPausesDrop: number;
  /** Summed over the pauses that resumed (`toolResumes`). */
  toolPausedMs: Ms;
  toolResumes: number;
  /**
   * Prompt tokens at admissions (recomputed prompts included): the prefix hit rate's
   * denominator. A prompt handed over by a prefill instance counts only what is computed here:
   * its prefill, and whatever its prefix spared, were the prefill instance's.
   */
  promptTokens: Tokens;
  /** Of those, tokens served from the prefix cache. */
  prefixHitTokens: Tokens;
  /** Prompt tokens a prefill instance's hand-over spared (disaggregated serving): not counted above. */
  kvLoadedTokens: Tokens;
  /** Prompt tokens actually computed. */
  prefillTokens: Tokens;
  tokensGenerated: Tokens;
  finished: number;
  cancelled: number;
  failed: number;
  prefixEvictedBlocks: number;
}

export function createStats(): EngineStats {
  return {
    steps: 0,
    busyMs: 0,
    preemptions: 0,
    preemptionsRecompute: 0,
    preemptionsSwap: 0,
    preemptionsKeep: 0,
    decodesDeferred: 0,
    swapTransferBlocks: 0,
    recomputedTokens: 0,
    toolPausesKeep: 0,
    toolPausesSwap: 0,
    toolPausesDrop: 0,
    toolPausedMs: 0,
    toolResumes: 0,
    promptTokens: 0,
    prefixHitTokens: 0,
    kvLoadedTokens: 0,
    prefillTokens: 0,
    tokensGenerated: 0,
    finished: 0,
    cancelled: 0,
    failed: 0,
    prefixEvictedBlocks: 0,
  };
}

/** Adds `from`'s counters to `into` (summing replicas for a report). */
export function addStats(into: EngineStats, from: EngineStats): EngineStats {
  for (const k of Object.keys(into) as (keyof EngineStats)[]) into[k] += from[k];
  return into;
}
