/**
 * A backend is one inference replica as the gateway reaches it: an OpenAI-compatible HTTP
 * server (vLLM, SGLang, TGI, llama.cpp…) or an in-process simulated engine. The gateway always
 * streams from it — token timing is what it measures and controls — and turns the stream into
 * whatever the client asked for. Rule: `stream` hands each token to `onToken` synchronously as it
 * arrives (no promise per token: at thousands of tokens a second each layer of them shows) and
 * settles once — with the stream's end, or an `UpstreamError`; aborting `signal` stops it, frees
 * the request upstream and rejects with the abort's reason.
 */
import type { ModelListing } from './backend-metrics.ts';
import type { TtftParts } from '../core/observe/request-outcome.ts';
import type { Ms, Tokens } from '../core/request/units.ts';
import type { AnswerApi, ToolCallDelta } from '../openai/index.ts';
import type { TraceHeaders } from './tracing/trace-context.ts';

export type ApiKind = 'chat' | 'completion';

/**
 * The API a client calls: a backend's own, or OpenAI's Responses API, which the gateway serves
 * over its backends' chat completions (openai/responses-request.ts).
 */
export type Endpoint = AnswerApi;

/** The backend API an endpoint is served over. */
export const upstreamKind = (e: Endpoint): ApiKind => (e === 'responses' ? 'chat' : e);

export interface UpstreamCall {
  readonly id: string;
  readonly kind: ApiKind;
  /**
   * The client's request body as it goes upstream (model, messages/prompt, max_tokens…): the
   * object src/openai's parser returned — validated once, at the gateway's door — with the
   * degraded output cap applied; an in-process backend reads it as such.
   */
  readonly body: Readonly<Record<string, unknown>>;
  readonly signal: AbortSignal;
  /** The W3C trace context to send with it (the attempt's span as parent), if any. */
  readonly trace?: TraceHeaders;
  /** Its prompt staged in pieces (`core/routing/staged-prefill.ts`); absent: sent whole. */
  readonly staged?: StagedCall;
  /**
   * The tier it was served in, where the client named one (`service_tier`, which no backend is
   * sent): the chunks forwarded to the client name it, as the gateway's own do.
   */
  readonly serviceTier?: string;
}

/**
 * A staged prompt: pieces of `pieceTokens` after the `cachedTokens` its replica is expected to
 * hold, of the `promptTokens` the gateway estimated. An HTTP backend sends the leading pieces
 * first (`staged-pieces.ts`); an in-process engine is told the piece size.
 */
export interface StagedCall {
  readonly pieceTokens: Tokens;
  readonly cachedTokens: Tokens;
  readonly promptTokens: Tokens;
}

/**
 * The delta field a chat model's reasoning streams in (vLLM's reasoning parsers; older releases:
 * `reasoning_content`).
 */
export type ReasoningField = 'reasoning' | 'reasoning_content';

export interface TokenEvent {
  /** The reply's text; '' for a token of reasoning alone. */
  readonly text: string;
  /** Which of a request's choices (`n`) it belongs to; absent: the first (0). */
  readonly choice?: number;
  /**
   * A request for several choices: this choice ends here. Such an event carries no token (its
   * text is ''); its finish goes to the client now, and the stream's end closes the whole.
   */
  readonly finish?: ChoiceFinish;
  /** The upstream's SSE frame for this token (its bytes) when it can go to the client unchanged. */
  readonly sse?: Uint8Array;
  /** A reasoning model's thinking in this token, and the field it came in. */
  readonly reasoning?: { readonly field: ReasoningField; readonly text: string };
  /** Pieces of the tool calls the reply makes, as they stream (a parsing server's). */
  readonly toolCalls?: readonly ToolCallDelta[];
  /**
   * The token's log probabilities, when the client asked: the server's own object (chat's
   * `{content: […]}`, a completion's `{tokens: […], token_logprobs: […], …}`), passed on.
   */
  readonly logprobs?: object;
}

/** How one of a request's several choices ended: vLLM's finish reason, and a call's close. */
export interface ChoiceFinish {
  readonly reason: string;
  readonly toolCalls?: readonly ToolCallDelta[];
}

/** Called with the time (the gateway's clock) a token was written to the client. */
export type Sent = (atMs: Ms) => void;

/**
 * Receives a stream's tokens; it must not throw. A `sent` given with a token is called once the
 * token has been written to the client's connection — at once where it goes to none — so that
 * its gap is timed where the client's is (`stream-meter.ts`). Backends give none.
 */
export type TokenSink = (token: TokenEvent, sent?: Sent) => void;

export interface StreamEnd {
  /** The first choice's, of a request for several (each told as it ended: `TokenEvent.finish`). */
  readonly finishReason: string;
  readonly promptTokens: Tokens;
  /** Every choice's tokens. */
  readonly completionTokens: Tokens;
  /** A request for several choices (`n` > 1): how many; each ended with its own finish event. */
  readonly choices?: number;
  /**
   * The prompt's tokens the backend served from its prefix cache, when it says (vLLM with
   * `--enable-prompt-tokens-details`, `goodput engine` always).
   */
  readonly cachedTokens?: Tokens;
  /** The backend's own account of its part of TTFT (its queue from arrival in the engine), when it gives one. */
  readonly ttftParts?: TtftParts;
  /**
   * The backend sent more tokens than the output cap asked of it: the stream was cut at the cap
   * (and ends as `length`), the rest never reached the client.
   */
  readonly pastCap?: true;
  /** Pieces of tool calls the finish carries (a filler call's close: filler-calls.ts). */
  readonly finishToolCalls?: readonly ToolCallDelta[];
}

/** What the gateway knows of a backend's load: its own scrape or the engine itself. */
export interface BackendLoad {
  /** False while unreachable, unhealthy or its figures are stale: never read as idle. */
  readonly ready: boolean;
  readonly running: number;
  readonly waiting: number;
  /**
   * Of those, the requests this gateway did not send: another gateway's sharing the backend, or
   * a client's of its own. Only where the figures are the server's own gauges.
   */
  readonly others?: number;
  /** KV cache usage in [0, 1]. */
  readonly kvUsage: number;
  /** The tokens its KV cache holds, when it says (`backend-metrics.ts`). */
  readonly kvCapacityTokens?: Tokens;
  readonly prefixHitRate?: number;
  readonly preemptions?: number;
  /**
   * LoRA adapters resident in its GPU slots, when it says: a vLLM's as its `lora_requests_info`
   * has shown them running, remembered (`lora-residency.ts`).
   */
  readonly loras?: readonly string[];
  /** Distinct adapters one batch may run (vLLM's `max_loras`, its `lora_requests_info`), when it says. */
  readonly maxLoras?: number;
  /**
   * The LoRA adapters it serves at all (its `/v1/models` entries with a parent model), once it
   * has listed them; undefined: not known, taken as every adapter the fleet serves.
   */
  readonly servable?: readonly string[];
  /** What its `/v1/models` last listed, once it has answered with a list. */
  readonly listed?: ModelListing;
  /** When these figures were taken. */
  readonly atMs: Ms;
  /** Why it is not ready, when it is not (for the log line that says so). */
  readonly why?: string;
}

export interface Backend {
  readonly name: string;
  /** Where a network backend listens: its attempts' `server.address` and `server.port`. */
  readonly server?: { readonly address: string; readonly port: number };
  stream(call: UpstreamCall, onToken: TokenSink): Promise<StreamEnd>;
  load(): BackendLoad;
  close(): Promise<void>;
}

/**
 * The upstream failed, or answered with an error: `status` is its HTTP status (undefined when
 * there was no answer — no connection, a stream that broke), `beforeFirstToken` says whether
 * another backend may still be tried, and `body` is the upstream's own error body (its first
 * few KB), which a 4xx passes on to the client: the request, not the backend, was at fault.
 */
export class UpstreamError extends Error {
  readonly kind = 'upstream' as const;
  readonly status: number | undefined;
  readonly beforeFirstToken: boolean;
  readonly body: string | undefined;
  /**
   * The backend refused a request it should serve: a 404 for the model the gateway serves, which
   * its own `/v1/models` does not list (a backend started under another model name).
   */
  readonly misconfigured: boolean;
  /** When the backend said to come back (its Retry-After, a 429's or a 503's). */
  readonly retryAfterMs: Ms | undefined;
  constructor(
    message: string,
    status: number | undefined,
    beforeFirstToken: boolean,
    body?: string,
    misconfigured = false,
    retryAfterMs?: Ms,
  ) {
    super(message);
    this.name = 'UpstreamError';
    this.status = status;
    this.beforeFirstToken = beforeFirstToken;
    this.body = body;
    this.misconfigured = misconfigured;
    this.retryAfterMs = retryAfterMs;
  }

  /**
   * A 4xx that says the request is at fault: the backend refused it, and would refuse it
   * anywhere. Not a 429 (the backend is busy), nor a 401, 403 or 407: those refuse the gateway's
   * own credentials to the backend, which no client's request can mend; nor what only a backend
   * can be at fault for, the request's model and path being the gateway's, checked at its door —
   * a 404 or 405 (a path or model it does not serve), a 408 (its own timeout), a 421 (not the
   * server it should be), a 499 (it closed on the gateway); nor a backend's refusal of a model it
   * was meant to serve (`misconfigured`): another backend may serve it.
   */
  get requestAtFault(): boolean {
    const s = this.status;
    if (this.misconfigured) return false;
    return s !== undefined && s >= 400 && s < 500 && !NOT_THE_REQUEST.has(s);
  }
}

/** A backend's 4xx answers that are not the request's fault. */
const NOT_THE_REQUEST = new Set([401, 403, 404, 405, 407, 408, 421, 429, 499]);

export function isUpstreamError(e: unknown): e is UpstreamError {
  return e instanceof UpstreamError;
}

/**
 * A backend's end with its counts held to what a request on this fleet can be: a prompt within
 * the context, and each choice's reply within it too. A backend's figures are checked, not
 * trusted: one bogus usage would otherwise charge its tenant's quota for hours and skew the
 * metrics and the lengths learned.
 */
export function boundedEnd(end: StreamEnd, maxModelLen: Tokens): StreamEnd {
  const outputAtMost = maxModelLen * (end.choices ?? 1);
  if (end.promptTokens <= maxModelLen && end.completionTokens <= outputAtMost) return end;
  return {
    ...end,
    promptTokens: Math.min(end.promptTokens, maxModelLen),
    completionTokens: Math.min(end.completionTokens, outputAtMost),
    ...(end.cachedTokens === undefined
      ? {}
      : { cachedTokens: Math.min(end.cachedTokens, maxModelLen) }),
  };
}
