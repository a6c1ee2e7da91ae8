/**
 * One request's state inside a replica. Held directly by the running list and the waiting
 * queue so the hot path never looks a sequence up. Token accounting follows vLLM V1: a
 * sequence has `target` tokens to put in KV before it samples again (its prompt, or after a
 * recompute preemption its prompt plus every token already emitted); `computed` counts those
 * in KV. Once the prefill is done, each decode computes one token (the last one emitted).
 */
import type { EngineRequest } from './engine-types.ts';
import type { PrefixEntry } from './prefix-cache.ts';
import { NO_RUN } from './token-runs.ts';

/** `Seq.pauseAt` of a sequence with no tool call ahead: beyond any output (and a small integer). */
export const NO_PAUSE = 2 ** 30;

/** `Seq.steadyOrd` of a sequence in no steady group (steady-decodes.ts). */
export const NOT_STEADY = -1;

export const SeqState = { Waiting: 0, Running: 1, Swapped: 2, Done: 3, Cancelled: 4 } as const;
export type SeqState = (typeof SeqState)[keyof typeof SeqState];

export class Seq<R extends EngineRequest> {
  readonly req: R;
  readonly input: number;
  /** Tokens to emit in all (the request's outputTokens, capped at the model's length). */
  readonly output: number;
  state: SeqState = SeqState.Waiting;
  target: number;
  computed = 0;
  /** Tokens already sent to the client; the next one emitted has this index. */
  emitted = 0;
  prefilling = true;
  /** Tokens scheduled in the step in flight (0: not in it). */
  sched = 0;
  /** Its run of tokens not yet reported, as step numbers `(runFrom, runTo]` (token-runs.ts). */
  runFrom = NO_RUN;
  runTo = NO_RUN;
  /** GPU blocks held, shared prefix blocks included. */
  blocks = 0;
  /** Blocks parked in the host pool while swapped out. */
  hostBlocks = 0;
  /** Prompt tokens served from the prefix cache at the latest admission. */
  cachedTokens = 0;
  /**
   * Prompt tokens whose KV a prefill instance computed and sent (disaggregated serving): taken
   * as computed at its first admission, then 0 — after a recompute preemption it is gone.
   */
  transferred: number;
  /**
   * Of the prompt, tokens a prefill instance's hand-over spared at the latest admission: its KV
   * received, or already cached here (0 for a prompt computed here).
   */
  loadedTokens = 0;
  /** Paused for a tool call: not scheduled, not admitted, until it resumes. */
  paused = false;
  /**
   * Preempted for compute only (priority scheduling, a higher-priority request needed its seat):
   * in the batch with its KV, not scheduled, until a seat frees.
   */
  held = false;
  /** A staged prompt whose piece has just been computed: it sits out the next step. */
  pieceRest = false;
  /** The next of its tool calls (index into req.toolCalls). */
  toolNext = 0;
  /** Tokens its tool calls' results have added to its context so far. */
  toolTokens = 0;
  /** Tokens emitted at which that call pauses it (`NO_PAUSE` when none is left). */
  pauseAt: number;
  /** When its current pause began. */
  pausedAtMs = 0;
  // In a replica's steady group (steady-decodes.ts): its order there (`NOT_STEADY` when in
  // none), its counts as of step steadyK0 (computed and emitted as offsets from the step
  // number), the phase of its block allocations, and the step of its next event.
  steadyOrd = NOT_STEADY;
  steadyK0 = 0;
  steadyCOff = 0;
  steadyEOff = 0;
  steadyB0 = 0;
  steadyPhase = 0;
  steadyEventK = 0;

  // Prefix caching: entry j spans `entryTokens` (a multiple of both the hash block and the KV
  // block) and is named by hashes[(j + 1) · stride − 1]. cacheLimit = 0 disables it.
  readonly hashes: readonly string[];
  readonly stride: number;
  readonly entryTokens: number;
  readonly entryBlocks: number;
  readonly cacheLimit: number;
  /** Next entry to insert once computed. */
  cacheNext = 0;
  shared: PrefixEntry[] | null = null;
  sharedBlocks = 0;

  constructor(req: R, output: number, blockSize: number, caching: boolean) {
    this.req = req;
    this.input = req.inputTokens;
    this.output = output;
    this.target = req.inputTokens;
    this.transferred = req.kvTransferredTokens ?? 0;
    this.pauseAt = req.toolCalls?.[0]?.afterTokens ?? NO_PAUSE;
    const p = req.prefix;
    const bt = p?.blockTokens ?? 0;
    if (caching && p !== undefined && Number.isInteger(bt) && bt > 0 && p.hashes.length > 0) {
      const unit = lcm(bt, blockSize);
      this.hashes = p.hashes;
      this.stride = unit / bt;
      this.entryTokens = unit;
      this.entryBlocks = unit / blockSize;
      // Only full entries inside the prompt: a trailing hash may name a partial block.
      this.cacheLimit = Math.min(
        Math.floor(p.hashes.length / this.stride),
        Math.floor(this.input / unit),
      );
    } else {
      this.hashes = NO_HASHES;
      this.stride = 1;
      this.entryTokens = blockSize;
      this.entryBlocks = 1;
      this.cacheLimit = 0;
    }
  }

  /**
   * After a recompute preemption: everything in its context so far — prompt, tool results and
   * output — is recomputed as prompt.
   */
  restart(): void {
    this.target = this.input + this.toolTokens + this.emitted;
    this.computed = 0;
    this.prefilling = true;
    this.cachedTokens = 0;
    this.loadedTokens = 0;
    this.transferred = 0;
    this.cacheNext = 0;
  }
}

/**
 * The output `req` can emit, and the tool-result tokens that join its context before it ends:
 * its context — prompt, tool results and output so far — stays under `maxLen`, as vLLM caps a
 * request's output at max_model_len. A tool call whose result would make the next turn's prompt
 * reach `maxLen` ends the episode there (vLLM would refuse that turn).
 */
export function contextLimits(
  req: EngineRequest,
  maxLen: number,
): { output: number; toolTokens: number } {
  let output = Math.min(req.outputTokens, maxLen - req.inputTokens);
  let toolTokens = 0;
  for (const call of req.toolCalls ?? []) {
    if (call.afterTokens >= output) break;
    if (req.inputTokens + call.afterTokens + toolTokens + call.resultTokens >= maxLen) {
      output = call.afterTokens;
      break;
    }
    toolTokens += call.resultTokens;
    output = Math.min(output, maxLen - req.inputTokens - toolTokens);
  }
  return { output, toolTokens };
}

/** Prompt tokens this sequence still has to compute (0 once decoding). */
export function prefillRemaining(s: Seq<EngineRequest>): number {
  return s.prefilling ? s.target - s.computed : 0;
}

const NO_HASHES: readonly string[] = [];

function lcm(a: number, b: number): number {
  let x = a;
  let y = b;
  while (y !== 0) [x, y] = [y, x % y];
  return (a / x) * b;
}
