/**
 * What admission may know of the fleet at decision time: its fixed facts plus a summary the
 * pipeline builds from its own ledger (what it dispatched, what has streamed) and the queue.
 * Stale or missing backend figures never read as idle: the ledger's own counts are the floor.
 */
import type { Ms, Tokens } from '../request/units.ts';
import type { SloClassName } from '../request/slo-classes.ts';
import type { ReasoningEffort } from '../request/request.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';

export interface QueueAhead {
  /** Requests queued ahead of a new one of this class (its band and higher). */
  readonly requests: number;
  /** Predicted wait before it dispatches: the queue model's, calibrated by what waits were. */
  readonly waitMs: Ms;
  /** The queue model's own prediction, before calibration (what calibration learns from). */
  readonly modelledWaitMs?: Ms;
  /** A wait it will almost surely not exceed (a high percentile of such waits). */
  readonly sureWaitMs?: Ms;
  /** A long prompt: it waits for a replica of its own, apart from the queue's order. */
  readonly long?: boolean;
  /** A long prompt that joins others' step: their prefill, which its first token waits for. */
  readonly sharedPrefillMs?: Ms;
}

/** A request as its wait is predicted. */
export interface WaitAsk {
  /** What it must prefill: its prompt less what a replica is expected to hold cached. */
  readonly promptTokens: Tokens;
  /** The KV it reserves: its prompt once and each choice's output. */
  readonly kvTokens: Tokens;
  /** Each choice's output tokens (its p50); default 1. */
  readonly outputTokens?: Tokens;
  /** The sequences it seats in a batch: its choices (`n`); default 1. */
  readonly seqs?: number;
  /** Its tenant: the band's fair order places it. */
  readonly tenant?: string;
  /** The reasoning effort it asked for: its output lengths are learned at it. */
  readonly reasoningEffort?: ReasoningEffort;
  /** Its LoRA adapter: no sooner than a replica has a slot for it. */
  readonly adapter?: string;
}

export interface FleetLoad {
  readonly spec: FleetSpec;
  /** Replicas ready to take work. */
  readonly readyReplicas: number;
  /** Largest KV (tokens) any ready replica has left after its in-flight reservations. */
  readonly maxFreeKvTokens: Tokens;
  /** The largest KV cache (tokens) of a ready replica; with none ready, the spec's. */
  readonly largestKvTokens: Tokens;
  /** Decoding streams per ready replica, and their mean context, averaged over the fleet. */
  readonly decodeBatch: number;
  readonly decodeContextTokens: Tokens;
  /** Time of one decode step at that batch. */
  readonly decodeStepMs: Ms;
  /**
   * The step the ready replicas run now, on average, at their pace: their decodes beside the
   * prompt chunks pending there. What a staged prompt's steps take (`servedPrefillMs`).
   */
  readonly stepMs: Ms;
  /**
   * Disaggregated serving: how long a prompt dispatched now waits in the prefill pool behind
   * the prompts queued there (its steps of them, each a full prefill step); 0 when colocated.
   */
  readonly prefillQueueMs: Ms;
  /** The class's queue budget (ms it may wait and still make its TTFT), null when unknown. */
  queueBudgetMs(cls: SloClassName): Ms | null;
  /**
   * The target sojourn while queue-delay control is in force for the class (admission then
   * admits only predicted waits within it), else null. `waitMs` is the predicted wait of the
   * request being decided when it queues in order (0 for a long prompt): a burst shows in it
   * before the queue's head has aged.
   */
  queueTargetMs(cls: SloClassName, waitMs: Ms): Ms | null;
  /** Whether work of lower priority than `cls` waits (in a band, or deferred). */
  lowerWaiting(cls: SloClassName): boolean;
  /** Predicted wait of a new request of `cls`, as `ask` describes it. */
  queueAhead(cls: SloClassName, ask: WaitAsk): QueueAhead;
  /**
   * A floor under the `waitMs` `queueAhead` predicts for any request of `cls` from `tenant` that
   * prefills at most `promptTokensAtMost` tokens, whatever else it asks: what a host can know
   * before it reads a request's body. 0 when such a request could be a long prompt (its wait is
   * its own) or could be placed at once.
   */
  leastWaitMs(cls: SloClassName, tenant: string, promptTokensAtMost: Tokens): Ms;
}
