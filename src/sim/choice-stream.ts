/**
 * A further choice of a request for several (`n`), in the engine as vLLM V1 has it: a request of
 * its own (`{k}_{id}`, vLLM's name for a choice's child request) with the request's prompt, which
 * the prefix cache lets it find computed by a sibling. Its tokens are a stream of their own; the
 * request they belong to keeps its account (`RequestTracker`). One per attempt that is dispatched.
 */
import type { Ms, Tokens } from '../core/request/units.ts';
import type { EngineRequest } from '../engine/engine-types.ts';
import type { RequestTracker } from './request-tracker.ts';
import type { TokenClock } from './token-clock.ts';
import { TokenStream } from './token-stream.ts';

export class ChoiceStream extends TokenStream implements EngineRequest {
  readonly request: RequestTracker;
  readonly id: string;
  readonly inputTokens: Tokens;
  readonly outputTokens: Tokens;
  readonly prefix: EngineRequest['prefix'];
  readonly priority: number;
  readonly toolCalls: EngineRequest['toolCalls'];
  readonly adapter: string | undefined;
  readonly ttftDeadlineMs: Ms | undefined;
  readonly itlSloMs: Ms | undefined;
  readonly e2eDeadlineMs: Ms | undefined;
  /** Disaggregated serving: set as the prompt's KV reaches the replica, as the request's is. */
  kvTransferredTokens: Tokens | undefined;
  /** Staged as its request is: the same pieces reach the same cache. */
  readonly pieceTokens: Tokens | undefined;

  /** Choice `k` (from 1) of `of`'s attempt now dispatched, as that attempt asks. */
  constructor(of: RequestTracker, k: number, times: TokenClock) {
    super(times, of.outputTokens, of.gaps);
    this.request = of;
    this.id = `${k}_${of.id}`;
    this.inputTokens = of.inputTokens;
    this.outputTokens = of.outputTokens;
    this.prefix = of.prefix;
    this.priority = of.priority;
    this.toolCalls = of.toolCalls;
    this.adapter = of.adapter;
    this.ttftDeadlineMs = of.ttftDeadlineMs;
    this.itlSloMs = of.itlSloMs;
    this.e2eDeadlineMs = of.e2eDeadlineMs;
    this.kvTransferredTokens = of.kvTransferredTokens;
    this.pieceTokens = of.pieceTokens;
  }
}

/** What a simulated replica runs: a request, or a further choice of one. */
export type SimSequence = RequestTracker | ChoiceStream;
