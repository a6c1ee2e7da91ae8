/**
 * The engine's contract with whoever drives it (the simulator, the wall-clock engine server,
 * the gateway's embedded fleet): what goes in, which events come out, how it is configured.
 */
import type { Ms, Tokens } from '../core/request/units.ts';
import type { PrefixBlocks, ToolCall } from '../core/request/request.ts';
import type { GpuSpec, ModelSpec } from './hardware.ts';
import type { StepEnds } from './token-runs.ts';

export interface EngineRequest {
  readonly id: string;
  readonly inputTokens: Tokens;
  /** Tokens to generate before the sequence stops (EOS or max_tokens, decided by the driver). */
  readonly outputTokens: Tokens;
  readonly prefix?: PrefixBlocks;
  /**
   * vLLM's request `priority` (lower is served first) under `--scheduling-policy priority`;
   * 0 when absent. Ignored under FCFS.
   */
  readonly priority?: number;
  /** Tool calls it pauses for while generating (agents), in output order. */
  readonly toolCalls?: readonly ToolCall[];
  /** When its first token is due (clock ms), if it has such an objective: `ttftBoostMs` reads it. */
  readonly ttftDeadlineMs?: Ms;
  /** Its token-gap objective (ms), if its class has one: slack-aware preemption reads it. */
  readonly itlSloMs?: Ms;
  /** When it must be complete (clock ms), if it has such an objective: slack-aware preemption. */
  readonly e2eDeadlineMs?: Ms;
  /**
   * Disaggregated serving: this many of its prompt tokens were prefilled by a prefill instance
   * and their KV sent here; the replica computes only the rest (at least the last token, to
   * sample from), as vLLM's KV connector loads external computed tokens.
   */
  readonly kvTransferredTokens?: Tokens;
  /** The LoRA adapter it runs with (one of `loraModules`); the base model when absent. */
  readonly adapter?: string;
  /**
   * A staged prompt (`core/routing/staged-prefill.ts`): its host sends it in pieces of this many
   * tokens, one request a piece, each a prefix the prefix cache keeps for the next. A piece is
   * computed in steps of its own, and the step after it ends runs without it: the next piece is
   * on its way. Modelled as one sequence whose prompt advances a piece at a time.
   */
  readonly pieceTokens?: Tokens;
}

/**
 * What a sequence paused for a tool call does with its KV cache: keeps it (holding its blocks
 * and its seat, nothing to redo), swaps it to host memory (moved out and back over the host
 * link), or drops it (its context prefilled again on resume). `auto` (Goodput's engine policy):
 * keep while tool calls on this replica are expected to return within `toolKeepMs` and KV is not
 * short, else the cheaper of swap and drop, as `auto` preemption chooses.
 */
export type ToolKvMode = 'auto' | 'keep' | 'swap' | 'drop';

/**
 * How a preempted sequence gives its KV back: recompute (freed, its prompt and output prefilled
 * again), swap (moved to host memory and back over the host link), or — Goodput's engine policy,
 * not a vLLM option — `auto`: per victim, whichever of the two is predicted cheaper.
 */
export type PreemptionMode = 'recompute' | 'swap' | 'auto';
/**
 * How a preemption victim is chosen: `newest` as vLLM does, or `slack` (Goodput's engine policy):
 * among the lowest priority, the one whose objectives a stall costs least (`victims.ts`).
 */
export type VictimChoice = 'newest' | 'slack';
/** What one preemption did; `keep`: compute only, its KV kept (priority scheduling). */
export type PreemptionKind = 'recompute' | 'swap' | 'keep';

export interface EngineConfig {
  readonly model: ModelSpec;
  readonly gpu: GpuSpec;
  readonly tp: number;
  /** vLLM's max_model_len: the longest sequence (prompt + output) served; ≤ the model's context. */
  readonly maxModelLen: number;
  /** vLLM's max_num_seqs: sequences running at once. */
  readonly maxNumSeqs: number;
  /** vLLM's max_num_batched_tokens: token budget of one step (decodes count one each). */
  readonly maxBatchedTokens: number;
  /** Chunked prefill (vLLM V1, or V0 with it on); false: V0's prefill-first steps of whole prompts. */
  readonly chunkedPrefill: boolean;
  /** vLLM 0.6's num_scheduler_steps: decode steps run per scheduling (1: every step is planned). */
  readonly schedulerSteps: number;
  /**
   * vLLM V1's long_prefill_token_threshold: the most prompt tokens one sequence prefills in a
   * step (0: no cap beyond the step's budget). Chunked prefill only.
   */
  readonly longPrefillTokenThreshold?: number;
  /**
   * An iteration-time cap (Goodput's engine policy, not a vLLM option): a step's prefill tokens
   * are cut so that the step, with its decodes, is predicted within this many ms — the token gap
   * of the running streams is protected from long prompts. Chunked prefill only.
   */
  readonly maxIterationMs?: number;
  /**
   * vLLM's --scheduling-policy: `fcfs` (arrival order) or `priority` (by the request's priority,
   * then arrival; running sequences kept in that order, so preemption takes the lowest first).
   */
  readonly schedulingPolicy?: 'fcfs' | 'priority';
  /**
   * A waiting request this close to its first-token deadline (ms) is admitted before every
   * other waiting one, whatever its priority (Goodput's engine policy, not a vLLM option).
   */
  readonly ttftBoostMs?: number;
  /**
   * Which running sequence is preempted when another cannot grow: `newest` (vLLM: the back of
   * the running list) or `slack` (Goodput's engine policy, not a vLLM option: among the lowest
   * priority, the one whose objectives a stall costs least; `victims.ts`). Default newest.
   */
  readonly preemptionVictims?: VictimChoice;
  /**
   * A per-iteration decode token budget (Goodput's engine policy, not a vLLM option): a step
   * carries at most this many decodes, the front of the running list first — under priority
   * scheduling the highest priority, so lower classes decode on the budget left over — and the
   * rest sit the step out, their KV held. Bounds a step's decode time, and with it the token gap
   * of the streams that are scheduled. Unset: every running decode, every step.
   */
  readonly decodeTokenBudget?: number;
  /** KV of a sequence paused for a tool call (default auto). */
  readonly toolKv?: ToolKvMode;
  /** Under `auto`, the expected tool wait up to which KV is kept (default 2,000 ms). */
  readonly toolKeepMs?: number;
  /** KV block size in tokens. */
  readonly blockSize: number;
  /** Fraction of GPU memory the engine may use for weights, activations and KV. */
  readonly gpuMemoryUtilization: number;
  readonly preemption: PreemptionMode;
  readonly enablePrefixCaching: boolean;
  /**
   * When a prompt block joins the prefix cache: as its KV is allocated, in the step that
   * computes it (vLLM V1: a sequence scheduled later in the same step finds it, so requests that
   * arrive together — `n` choices of one prompt — compute it once), or once that step is done
   * (V0). Default: once done.
   */
  readonly prefixCachedOnAllocation?: boolean;
  /** Fixes KV capacity in blocks instead of deriving it from memory (tests, what-ifs). */
  readonly numGpuBlocks?: number;
  /** Host blocks available for swap-mode preemption. */
  readonly numCpuBlocks?: number;
  /** vLLM's --lora-modules: the adapters served by name (none: LoRA off). */
  readonly loraModules?: readonly string[];
  /** vLLM's --max-loras: adapters in GPU slots, and distinct adapters in one batch (default 1). */
  readonly maxLoras?: number;
  /** Time to bring an adapter into a GPU slot (Goodput's model, default 30 ms). */
  readonly loraLoadMs?: number;
}

export type FailReason = 'prompt_exceeds_kv_capacity' | 'prompt_exceeds_max_model_len';

/** Events, in the order they happen. `R` is the driver's own request object, handed back as is. */
export interface EngineListener<R extends EngineRequest> {
  /** The step starting at `atMs` holds the sequence's first prefill chunk (each time it restarts after preemption, too). */
  onPrefillStart(req: R, atMs: Ms): void;
  /** The step [stepStartMs, atMs) completed the prefill and emitted the first token. */
  onFirstToken(req: R, atMs: Ms, stepStartMs: Ms, cachedTokens: Tokens): void;
  /**
   * Every token after the first; `index` counts from 1 (the first token is 0). With
   * `onTokenRun`, only those that do not follow their previous token by one step.
   */
  onToken(req: R, atMs: Ms, index: number): void;
  /**
   * Optional, with `onStepTokens`: decode tokens in runs (token-runs.ts). The tokens of `req`
   * that came at steps `from + 1` … `to`, each the step after the one before; their times are
   * `steps.endMs(step)`, and the token before them came at `steps.endMs(from)`. Reported before
   * any other event of `req` that follows them.
   */
  onTokenRun?(req: R, steps: StepEnds, from: number, to: number): void;
  /** The step ending now gave `count` tokens that continue a run, each `gapMs` after the last. */
  onStepTokens?(gapMs: Ms, count: number): void;
  onFinish(req: R, atMs: Ms): void;
  onPreempt(req: R, atMs: Ms, mode: PreemptionKind): void;
  /** It paused for a tool call, its KV kept, swapped or dropped. */
  onPause?(req: R, atMs: Ms, kv: 'keep' | 'swap' | 'drop'): void;
  /** Its tool call returned: the result is prefilled next, then generation goes on. */
  onResume?(req: R, atMs: Ms): void;
  /** The engine cannot serve it at all; its blocks (if any) are already freed. */
  onFail(req: R, atMs: Ms, reason: FailReason): void;
  /**
   * A prefix-cache entry was cached (`stored`) or evicted (`removed`), named by its chained
   * block hash: vLLM's KV cache events, for a router's precise prefix index.
   */
  onKvEvent?(kind: 'stored' | 'removed', hash: string): void;
}

/** What a router or autoscaler may read of a replica, cheaply, at any time. */
export interface ReplicaLoad {
  readonly running: number;
  readonly waiting: number;
  readonly kvUsedBlocks: number;
  readonly kvTotalBlocks: number;
  /** Prompt tokens waiting and in progress that are not yet computed. */
  readonly pendingPrefillTokens: Tokens;
  /** LoRA adapters in GPU slots, least recently used first (absent when none is served). */
  readonly loras?: readonly string[];
}
