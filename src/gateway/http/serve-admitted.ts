/**
 * The last step of a completion: let the gateway decide before any byte goes out, then answer.
 * `client`: aborted when its client goes away (for a background response, when it is
 * cancelled).
 * A refusal is an HTTP error with Retry-After where a retry can succeed; an admitted request
 * streams (SSE, usage chunk when asked) or is collected into one response. One signal stops the
 * request in the queue and upstream, and says why: its client went away, its deadline passed
 * (armed once it is dispatched — while it waits, the pipeline expires it), or the gateway's
 * drain ran out of time. An upstream failure before the first token is retried through
 * admission on another backend while attempts and the deadline allow; a backend's 4xx is the
 * request's fault and goes to the client as the backend said it; after the first token, a
 * stream ends with an SSE error event naming what ended it.
 */
import type { ServerResponse } from 'node:http';
import type { RejectReason } from '../../core/request/decision.ts';
import type { LlmRequest } from '../../core/request/request.ts';
import { lookupTenant } from '../../core/config/tenant-schema.ts';
import { expiredRefusal } from '../../core/queueing/ticket-expiry.ts';
import type { TimerHandle } from '../../core/ports/timers.ts';
import {
  OpenAiError,
  answerId,
  includeUsage,
  continuousUsage,
  servedTier,
  ResponseBuilder,
  responsesParam,
  type ResponsesRequest,
  type ChatCompletionRequest,
  type CompletionRequest,
} from '../../openai/index.ts';
import {
  isUpstreamError,
  upstreamKind,
  type Endpoint,
  type StreamEnd,
  type UpstreamError,
} from '../backend.ts';
import { triedAgain } from '../upstream-attempt.ts';
import type { Pass } from '../shared/door.ts';
import type { StoredResponse } from '../shared/shared-store.ts';
import { RequestStopped, isRequestStopped, stoppedBy, type StopCause } from '../stop.ts';
import type { ClientHeaders } from './client-headers.ts';
import type { CompletionsDeps } from './completions.ts';
import type { Live } from './in-flight.ts';
import { completionForm, streamResponse, wholeResponse } from './answers.ts';
import { responsesForm, wholeResponses } from './responses-answer.ts';
import { SHUTTING_DOWN, refusal, refusalOf } from './refusals.ts';
import { askedOf, wordsFor } from './refusal-words.ts';
import { TokenRelay } from './token-relay.ts';
import { errorWhole, idHeaders, named, whole, type Answer, type Whole } from './answer.ts';
import type { RequestTrace } from '../tracing/request-trace.ts';
import { choicesOf } from '../../core/request/demand.ts';
import type { TurnLookup } from '../shared-turns.ts';

export type Parsed = ChatCompletionRequest | CompletionRequest;

export interface Served {
  readonly response: Answer;
  /** The body ends later and ends the pass (and the request) itself. */
  readonly streaming: boolean;
  /** Kept for replay under the request's Idempotency-Key. */
  readonly keep?: StoredResponse;
  /** Prompt + completion tokens it used: 0 when it never reached a backend. */
  readonly usedTokens: number;
}

export interface ServeContext {
  readonly pass: Pass;
  readonly live: Live;
  readonly outgoing: ServerResponse | undefined;
  /** Keep the answer for replay (the request has an Idempotency-Key). */
  readonly keep: boolean;
  /** A stream's request is over: called once its pass is given back and its last byte sent. */
  readonly ended: () => void;
  readonly trace: RequestTrace;
  /** The Responses request the chat request was made from, which its answer echoes. */
  readonly responses?: ResponsesRequest;
  /** Keeps its response once it has ended, before its last byte goes (kept-responses.ts). */
  readonly keepResponse?: (response: object) => Promise<unknown>;
  /** Told when it is admitted to wait in the queue, and when it is dispatched (background.ts). */
  readonly onQueued?: () => void;
  readonly onDispatched?: () => void;
  /** When it was created (Unix seconds), if not at its first token: its answer's `created`. */
  readonly createdS?: number;
  /**
   * Its Responses answer's builder, when one is made apart from it (background.ts), and where
   * that builder's events go as its reply comes: a background response's stream.
   */
  readonly builder?: ResponseBuilder;
  readonly events?: (sse: string) => void;
  /** Its tenant's token quota as it stands, which its answer tells (quota-headers.ts). */
  readonly quota?: Readonly<Record<string, string>>;
  /** Where it stands at a turn kept for it (shared-turns.ts). */
  readonly turn?: TurnLookup;
}

export async function admitAndServe(
  endpoint: Endpoint,
  client: AbortSignal,
  parsed: Parsed,
  headers: ClientHeaders,
  base: LlmRequest,
  deps: CompletionsDeps,
  r: ServeContext,
): Promise<Served> {
  const id = base.id;
  const kind = upstreamKind(endpoint);
  // What the tenant's token bucket is settled to: nothing until a backend has the prompt, then
  // the prompt and what streamed (the upstream's own count when it ran to its end; a backend
  // that reports no prompt count keeps the estimate's).
  let spent = 0;
  const used = (end: StreamEnd) => (end.promptTokens || base.inputTokens) + end.completionTokens;
  const final = (response: Whole): Served => ({
    response,
    streaming: false,
    usedTokens: spent,
  });
  const stop = new AbortController();
  const upstream = stop.signal;
  // A background run's stop says why (its client is the gateway itself: handed over, say).
  const clientGone = () =>
    stop.abort(
      isRequestStopped(client.reason) ? client.reason : new RequestStopped('client_closed'),
    );
  if (client.aborted) clientGone();
  else client.addEventListener('abort', clientGone, { once: true });
  r.live.onCut(() => stop.abort(new RequestStopped('shutting_down')));
  let deadline: TimerHandle | undefined;
  const unlink = () => {
    deadline?.cancel();
    client.removeEventListener('abort', clientGone);
    r.live.onCut(undefined);
  };
  let streaming = false;
  try {
    return await serve();
  } finally {
    if (!streaming) unlink();
  }

  async function serve(): Promise<Served> {
    const tries = deps.policy.resilience.upstreamAttempts;
    let failedOn = -1;
    for (let attempt = 0; ; attempt++) {
      const req = attempt === 0 ? base : { ...base, attempt: headers.attempt + attempt };
      // The first attempt's admission began at the door.
      if (attempt > 0) r.trace.admitting(deps.nowMs());
      // Its turn, if it holds one, is for its first attempt.
      const turn = attempt === 0 ? r.turn : undefined;
      const admitted = await deps.gateway.admit(req, upstream, {
        avoid: failedOn,
        turn: turn?.standing,
        trace: r.trace,
        onQueued: r.onQueued,
      });
      if (attempt === 0) {
        deps.turns.decided(req, turn, admitted.kind === 'rejected' ? admitted.decision : undefined);
      }
      // A retry after its backend failed that cannot be placed: the failure is the answer, to be
      // tried again when the refusal says (a client's own deadline passed is still a 504).
      const unplaced =
        admitted.kind === 'rejected'
          ? admitted.decision
          : admitted.kind === 'expired'
            ? { reason: admitted.reason, retryAfterMs: undefined }
            : undefined;
      if (attempt > 0 && unplaced !== undefined && unplaced.reason !== 'deadline_exceeded') {
        const why = `the upstream failed before the first token, and a retry could not be placed (${unplaced.reason})`;
        return final(named(upstreamFailed(why, unplaced.retryAfterMs), id));
      }
      if (admitted.kind === 'rejected') {
        const d = admitted.decision;
        const tenant = lookupTenant(deps.policy.tenants, req.tenant);
        return final(named(refusalOf(d, wordsFor(d, req, askedOf(endpoint, parsed, tenant))), id));
      }
      if (admitted.kind === 'expired') {
        return final(named(expired(admitted.reason, req, deps), id));
      }
      if (admitted.kind === 'stopped') return final(named(stopped(admitted.why), id));
      const ticket = admitted.ticket;
      r.onDispatched?.();
      // Once it runs, its deadline stops it wherever it is.
      if (base.deadlineMs !== undefined && deadline === undefined) {
        deadline = deps.timers.at(base.deadlineMs, () =>
          stop.abort(new RequestStopped('deadline_exceeded')),
        );
      }
      const relay = new TokenRelay();
      const retry = attempt + 1 < tries;
      const done = deps.gateway.run(ticket, kind, parsed, upstream, relay.sink, retry, r.trace);
      const streamed = () => base.inputTokens + relay.count;
      spent = base.inputTokens;
      // The answer is chosen at the first token, or when the stream ended or failed before one.
      const e = await Promise.race([
        relay.first.then(() => undefined),
        done.then(
          () => undefined,
          (e: unknown) => e ?? new Error('the stream failed'),
        ),
      ]);
      if (e !== undefined) {
        const why = stoppedBy(upstream);
        if (why !== undefined) return final(named(stopped(why), id));
        if (!isUpstreamError(e)) throw e;
        // A backend without the adapter its /v1/models listed (unloaded since) is tried again
        // too: another that loads it may serve the request, and the next scrape takes that one
        // off the adapter.
        if (triedAgain(e, ticket.req, retry)) {
          failedOn = ticket.replica;
          continue;
        }
        if (e.requestAtFault) return final(named(rejectedUpstream(e, endpoint), id));
        const failure = 'the upstream failed before the first token';
        return final(named(upstreamFailed(failure, e.retryAfterMs), id));
      }
      const degraded =
        ticket.decision.outcome === 'admit' ? ticket.decision.degradation : undefined;
      const extra: Record<string, string> = { ...idHeaders(id), ...r.quota };
      if (degraded !== undefined) extra['x-goodput-degraded'] = `level-${degraded.level}`;
      const head = {
        id: answerId(endpoint, ticket.req.id),
        created: r.createdS ?? Math.floor(deps.epochMs() / 1000),
        model: parsed.model,
        // Named where the client named one, as OpenAI's answers are.
        serviceTier: parsed.service_tier == null ? undefined : servedTier(parsed.service_tier),
      };
      const stream = parsed.stream === true;
      const asked = r.responses;
      const builder =
        asked === undefined
          ? undefined
          : (r.builder ??
            new ResponseBuilder(
              { id: ticket.req.id, createdAt: head.created, model: head.model, request: asked },
              stream,
            ));
      if (stream) {
        const response = streamResponse({
          form:
            builder === undefined
              ? completionForm(
                  kind,
                  head,
                  includeUsage(parsed),
                  degraded?.level,
                  choicesOf(ticket.req),
                  continuousUsage(parsed) ? ticket.req.inputTokens : undefined,
                )
              : responsesForm(builder, degraded?.level),
          relay,
          done,
          extra,
          keep: r.keep,
          onEnd: async (end, answer) => {
            if (end === undefined) r.trace.cut(stoppedBy(upstream) ?? 'upstream_error');
            unlink();
            if (builder?.ended !== undefined) await r.keepResponse?.(builder.ended);
            await r.pass.end(answer, end === undefined ? streamed() : used(end));
          },
          onFlushed: r.ended,
          onCancel: () => stop.abort(new RequestStopped('client_closed')),
          outgoing: r.outgoing,
        });
        streaming = true;
        r.trace.answered(200, undefined);
        return { response, streaming: true, usedTokens: spent };
      }
      let res;
      try {
        res =
          builder === undefined
            ? await wholeResponse(kind, head, relay, done, degraded?.level)
            : await wholeResponses(builder, relay, done, degraded?.level, r.events);
      } catch (e) {
        spent = streamed();
        const why = stoppedBy(upstream);
        if (why !== undefined) return final(named(stopped(why), id));
        if (isUpstreamError(e))
          return final(named(upstreamFailed('the upstream failed mid-generation'), id));
        throw e;
      }
      if (builder !== undefined) await r.keepResponse?.(res);
      const out = whole(200, extra, JSON.stringify(res));
      return {
        response: out,
        streaming: false,
        keep: r.keep
          ? { status: out.status, body: out.body, headers: { ...out.headers } }
          : undefined,
        usedTokens: used(await done),
      };
    }
  }
}

/**
 * A request that waited past a deadline: its client's (never retried), or its class's — told to
 * come back soon, unless its client's deadline will be out of reach by then.
 */
function expired(reason: RejectReason, req: LlmRequest, deps: CompletionsDeps): Whole {
  if (reason === 'deadline_exceeded') return refusal(reason, 504);
  return refusalOf(deps.gateway.pipeline.told(expiredRefusal(reason), req, deps.nowMs()));
}

/** The answer to a request the gateway stopped before its end. */
function stopped(why: StopCause): Whole {
  switch (why) {
    case 'deadline_exceeded':
      return refusal('deadline_exceeded', 504);
    case 'shutting_down':
    case 'handed_over':
      return refusalOf(SHUTTING_DOWN);
    case 'client_closed':
      // Nobody is there to read it.
      return errorWhole(new OpenAiError(499, 'client closed the request'));
  }
}

/**
 * A backend's 4xx: the request was at fault, and the client hears it as the backend said it —
 * in OpenAI's shape, which a body already in it keeps, and into which vLLM's older flat error
 * (`{"object": "error", "message": …}`) and TGI's (`{"error": "…", "error_type": …}`) are put,
 * their words kept. A Responses request's field is named as the client sent it, not as the chat
 * request it became (`responsesParam`).
 */
function rejectedUpstream(e: UpstreamError, endpoint: Endpoint): Whole {
  const status = e.status ?? 400;
  const body = e.body ?? '';
  const own = (param: string | null) =>
    param !== null && endpoint === 'responses' ? responsesParam(param) : param;
  const openAi = openAiError(body);
  if (openAi !== undefined) {
    const param = own(typeof openAi.param === 'string' ? openAi.param : null);
    if (param === openAi.param || param === null) return whole(status, {}, body);
    return whole(status, {}, JSON.stringify({ error: { ...openAi, param } }));
  }
  const said = backendWords(body);
  const message =
    said?.message ?? `the backend refused the request: ${body.slice(0, 200) || `HTTP ${status}`}`;
  return errorWhole(
    new OpenAiError(status, message, own(said?.param ?? null), 'upstream_rejected'),
  );
}

/** The message (and field) of an error body in another server's shape, when it has one. */
function backendWords(text: string): { message: string; param: string | null } | undefined {
  try {
    const v = JSON.parse(text) as { message?: unknown; error?: unknown; param?: unknown } | null;
    const message = typeof v?.message === 'string' ? v.message : v?.error;
    if (typeof message !== 'string' || message === '') return undefined;
    return { message, param: typeof v?.param === 'string' ? v.param : null };
  } catch {
    return undefined;
  }
}

function upstreamFailed(message: string, retryAfterMs = 1_000): Whole {
  const after = String(Math.max(1, Math.ceil(retryAfterMs / 1_000)));
  return errorWhole(new OpenAiError(502, message, null, 'upstream_error'), {
    'retry-after': after,
  });
}

/** The `error` object of a body in OpenAI's shape; undefined for any other. */
function openAiError(text: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(text) as { error?: unknown };
    return typeof v === 'object' && v !== null && typeof v.error === 'object' && v.error !== null
      ? (v.error as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
