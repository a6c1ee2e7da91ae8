/**
 * What the gateway and its embedded fleet's thread say to each other: plain data, structured
 * clone. Requests are numbered by the gateway; every submit gets exactly one end — `rejected`,
 * `finish`, `crash` or `closed` — after its tokens, in order.
 */
import type { TtftParts } from '../core/observe/request-outcome.ts';
import type { EngineSpec } from '../engine/engine-spec.ts';
import type { GenerationRequest, RejectReason } from '../engine-server/simulated-backend.ts';
import type { FinishReason } from '../openai/responses.ts';

export interface FleetSetup {
  readonly spec: EngineSpec;
  readonly replicas: number;
  readonly seed: number;
  /** Each LoRA adapter loaded on this many replicas (`adapterPlacement`); default all. */
  readonly adapterReplicas?: number;
}

export type FleetRequest =
  | {
      readonly t: 'submit';
      readonly id: number;
      readonly replica: number;
      readonly request: GenerationRequest;
      /** Choices to sample from it (`n`). */
      readonly choices: number;
      /** The field of the call's body its prompt is in, which a refusal names. */
      readonly promptField: string;
    }
  | { readonly t: 'cancel'; readonly id: number }
  | { readonly t: 'close' };

export type FleetReply =
  /** Refused at submit: why, and the engine's answer (`engineRefusal`). */
  | {
      readonly t: 'rejected';
      readonly id: number;
      readonly reason: RejectReason;
      readonly status: number;
      readonly body: string;
    }
  /** A token of its choice `c` (absent: the first). */
  | { readonly t: 'token'; readonly id: number; readonly text: string; readonly c?: number }
  /** One of several choices ended (the whole's `finish` follows once all have). */
  | { readonly t: 'choice-end'; readonly id: number; readonly c: number; readonly reason: string }
  | {
      readonly t: 'finish';
      readonly id: number;
      readonly reason: FinishReason;
      readonly promptTokens: number;
      readonly cachedTokens: number;
      readonly completionTokens: number;
      readonly ttftParts: TtftParts | undefined;
      /** A request for several: how many. */
      readonly choices?: number;
    }
  /** An injected fault cut it after `tokens` tokens. */
  | { readonly t: 'crash'; readonly id: number; readonly tokens: number }
  /** The engine shut down under it. */
  | { readonly t: 'closed'; readonly id: number; readonly tokens: number };

/** One replica's load, as its engine reports it. */
export interface ReplicaLoadMessage {
  readonly running: number;
  readonly waiting: number;
  readonly kvUsage: number;
  readonly preemptions: number;
  readonly loras?: readonly string[];
}

export type FleetMessage =
  | { readonly t: 'ready'; readonly loads: readonly ReplicaLoadMessage[] }
  | {
      readonly t: 'batch';
      readonly replies: readonly FleetReply[];
      readonly loads: readonly ReplicaLoadMessage[];
    };
