/**
 * The fixed facts about the replicas a pipeline serves: model, limits, KV size and a step-time
 * model for predicting prefill and decode durations. In the simulator they come from the engine
 * configuration and timing profile; in the gateway from backend configuration.
 */
import type { Ms, Tokens } from '../request/units.ts';
import type { StepTimeModel } from '../ports/step-time.ts';

export interface FleetSpec {
  readonly model: string;
  /** LoRA adapters the replicas serve (a request names one as its model). */
  readonly adapters: readonly string[];
  /** vLLM's max_loras: adapters in a replica's GPU slots, and distinct adapters per batch. */
  readonly maxLoras?: number;
  /** Time to bring an adapter into a GPU slot: what a cold replica adds to a request's start. */
  readonly adapterLoadMs?: number;
  readonly maxModelLen: Tokens;
  /** Engine token budget per step (vLLM max_num_batched_tokens): longer prompts prefill in chunks. */
  readonly maxBatchedTokens: Tokens;
  /**
   * vLLM V1's long_prefill_token_threshold: the most prompt tokens one sequence prefills in a
   * step, so a long prompt's chunks are this size beside other work. Absent or 0: no cap.
   */
  readonly longPrefillTokenThreshold?: Tokens;
  /**
   * Whether the host can stage a long prompt: send its leading pieces ahead of it, one request a
   * piece, for the replica's prefix cache to keep (`../routing/staged-prefill.ts`).
   */
  readonly stagesPrefill?: boolean;
  /** Engine's max running sequences (vLLM max_num_seqs). */
  readonly maxNumSeqs: number;
  readonly kvBytesPerToken: number;
  /** KV capacity of one replica, in tokens. */
  readonly replicaKvTokens: Tokens;
  readonly stepTime: StepTimeModel;
  /**
   * Disaggregated serving: a prefill pool computes every prompt and sends its KV, so a replica
   * here computes only each prompt's last token — placement sees every prompt as cached but one
   * token (admission still counts its prefill in the time to first token).
   */
  readonly prefilledElsewhere?: boolean;
  /**
   * Disaggregated serving: how long a prompt's KV (`tokens` of it) takes to cross from the
   * prefill pool to its decode replica, set-up included (`engine/kv-transfer.ts`).
   */
  readonly kvTransferMs?: (tokens: Tokens) => Ms;
}

/** The most prompt tokens one sequence prefills in a step: the chunk a long prompt is cut into. */
export function seqChunkTokens(spec: FleetSpec): Tokens {
  const cap = spec.longPrefillTokenThreshold ?? 0;
  return cap > 0 ? Math.min(cap, spec.maxBatchedTokens) : spec.maxBatchedTokens;
}
