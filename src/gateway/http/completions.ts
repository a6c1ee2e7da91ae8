/**
 * `POST /v1/chat/completions` and `POST /v1/completions`: authenticate, validate, turn the body
 * into the request the policy sees, and let the gateway decide before any byte goes out. A
 * refusal is an HTTP error with Retry-After; an admitted request streams (SSE, usage chunk when
 * asked) or is collected into one response. An upstream failure before the first token is
 * retried through admission on another backend while the deadline allows; after it, the
 * stream ends with an error event. Before admission the request passes the shared state (see
 * shared/door.ts: tenant quotas, retry budget, idempotency across replicas), and what it took
 * there is given back when it ends — answered, refused, failed, aborted, or when its stream's
 * body ends; a completed non-streaming answer is kept for replay under its Idempotency-Key.
 */
import type { ServerResponse } from 'node:http';
import type { ResolvedPolicy } from '../../core/config/policy.ts';
import { lookupTenant } from '../../core/config/tenant-schema.ts';
import type { LlmRequest } from '../../core/request/request.ts';
import type { Ms } from '../../core/request/units.ts';
import type { Timers } from '../../core/ports/timers.ts';
import {
  OpenAiError,
  errorResponse,
  estimateChatTokens,
  estimateCompletionTokens,
  includeUsage,
  invalidRequest,
  modelNotFound,
  outputLimit,
  parseChatCompletionRequest,
  parseCompletionRequest,
  parseJsonText,
  promptList,
} from '../../openai/index.ts';
import type { ApiKeys } from '../api-keys.ts';
import type { ApiKind, StreamEnd } from '../backend.ts';
import { isUpstreamError } from '../backend.ts';
import type { Gateway } from '../gateway.ts';
import type { GatewayMetrics } from '../gateway-metrics.ts';
import { OPEN_DOOR, atTheDoor, type Pass } from '../shared/door.ts';
import type { SharedStore, StoredResponse } from '../shared/shared-store.ts';
import { parseClientHeaders } from './client-headers.ts';
import { streamResponse, tagged, wholeResponse } from './answers.ts';
import { refusal } from './refusals.ts';
import { TokenRelay } from './token-relay.ts';

export interface CompletionsDeps {
  readonly gateway: Gateway;
  readonly keys: ApiKeys;
  readonly policy: ResolvedPolicy;
  readonly servedModels: readonly string[];
  readonly nowMs: () => Ms;
  readonly epochMs: () => number;
  readonly timers: Timers;
  readonly newId: () => string;
  /** Quotas, retry budgets and idempotency keys, shared with the other gateway replicas. */
  readonly store: SharedStore;
  readonly metrics: GatewayMetrics;
  /** Upstream attempts for one request, failovers included. */
  readonly maxUpstreamTries?: number;
}

/** Output tokens a request without a cap is charged in its tenant's shared token bucket. */
const UNCAPPED_OUTPUT_TOKENS = 128;

const unauthorized = () =>
  errorResponse(new OpenAiError(401, 'missing or invalid API key', null, 'invalid_api_key'));

/** `outgoing`: Node's response, when Node serves the request; a stream is written to it directly. */
export async function handleCompletion(
  kind: ApiKind,
  raw: Request,
  bodyText: string,
  deps: CompletionsDeps,
  outgoing?: ServerResponse,
): Promise<Response> {
  try {
    return await complete(kind, raw, bodyText, deps, outgoing);
  } catch (e) {
    if (e instanceof OpenAiError) return errorResponse(e);
    throw e;
  }
}

async function complete(
  kind: ApiKind,
  raw: Request,
  bodyText: string,
  deps: CompletionsDeps,
  outgoing: ServerResponse | undefined,
): Promise<Response> {
  // Authentication first: an unauthenticated caller learns nothing about the request's validity.
  let tenantName = 'default';
  if (deps.keys.required) {
    const auth = raw.headers.get('authorization') ?? '';
    const key = auth.startsWith('Bearer ') ? auth.slice(7) : '';
    const t = key === '' ? undefined : deps.keys.tenantOf(key);
    if (t === undefined) return unauthorized();
    tenantName = t;
  }
  const json = parseJsonText(bodyText);
  const parsed = kind === 'chat' ? parseChatCompletionRequest(json) : parseCompletionRequest(json);
  if (!deps.servedModels.includes(parsed.model))
    throw modelNotFound(parsed.model, deps.servedModels);
  if (kind === 'completion' && promptList(parsed as never).length !== 1) {
    throw invalidRequest(
      'prompt: expected one prompt (batched prompts are not supported)',
      'prompt',
    );
  }
  const headers = parseClientHeaders(raw.headers, deps.epochMs());
  const tenant = lookupTenant(deps.policy.tenants, tenantName);
  const limit = outputLimit(parsed);
  const inputTokens =
    kind === 'chat'
      ? estimateChatTokens((parsed as ReturnType<typeof parseChatCompletionRequest>).messages)
      : estimateCompletionTokens(promptList(parsed as never)[0]);
  const id = deps.newId();
  // An unknown tenant holds no shared state: the pipeline's contract gate turns it away.
  const door =
    tenant === undefined
      ? OPEN_DOOR
      : await atTheDoor(deps.store, deps.metrics, {
          tenant,
          requestId: id,
          tokens: inputTokens + (limit?.tokens ?? UNCAPPED_OUTPUT_TOKENS),
          attempt: headers.attempt,
          idempotencyKey: headers.idempotencyKey,
        });
  if (door.kind === 'answered') return door.response;
  let served: Served | undefined;
  try {
    served = await admitAndServe(kind, raw, parsed, json, headers, deps, {
      id,
      tenantName,
      sloClass: headers.sloClass ?? tenant?.defaultClass ?? 'interactive',
      inputTokens,
      maxTokens: limit?.tokens,
      pass: door.pass,
      outgoing,
    });
    return served.response;
  } finally {
    // A stream gives its pass back when its body ends; every other answer is final here.
    if (served?.streaming !== true) await door.pass.end(served?.keep, served?.usedTokens);
  }
}

interface Served {
  readonly response: Response;
  /** The body ends later and ends the pass itself. */
  readonly streaming: boolean;
  /** Kept for replay under the request's Idempotency-Key. */
  readonly keep?: StoredResponse;
  /** Prompt + completion tokens, when the stream ran to its end. */
  readonly usedTokens?: number;
}

type Parsed =
  ReturnType<typeof parseChatCompletionRequest> | ReturnType<typeof parseCompletionRequest>;

async function admitAndServe(
  kind: ApiKind,
  raw: Request,
  parsed: Parsed,
  json: unknown,
  headers: ReturnType<typeof parseClientHeaders>,
  deps: CompletionsDeps,
  r: {
    readonly id: string;
    readonly tenantName: string;
    readonly sloClass: LlmRequest['sloClass'];
    readonly inputTokens: number;
    readonly maxTokens: number | undefined;
    readonly pass: Pass;
    readonly outgoing: ServerResponse | undefined;
  },
): Promise<Served> {
  const stream = parsed.stream === true;
  const final = (response: Response): Served => ({ response, streaming: false });
  // Stops the request in the queue and upstream: the client gone, its deadline passed, or its
  // stream no longer read.
  const stop = new AbortController();
  const upstream = stop.signal;
  const clientGone = () => stop.abort(raw.signal.reason);
  if (raw.signal.aborted) clientGone();
  else raw.signal.addEventListener('abort', clientGone, { once: true });
  // Disarmed when the request ends, so long deadlines do not pile up timers.
  let deadline: { cancel(): void } | undefined;
  let streaming = false;
  try {
    return await serveWithin();
  } finally {
    if (!streaming) {
      deadline?.cancel();
      raw.signal.removeEventListener('abort', clientGone);
    }
  }

  async function serveWithin(): Promise<Served> {
    // A request past its deadline is cancelled everywhere: in the queue and upstream.
    if (headers.deadlineEpochMs !== undefined) {
      // Already past it (a late retry, a slow client): refused at once, nothing is queued.
      if (headers.deadlineEpochMs <= deps.epochMs()) {
        return final(tagged(refusal('deadline', 503, 1_000), r.id));
      }
      const inMs = Math.max(0, headers.deadlineEpochMs - deps.epochMs());
      deadline = deps.timers.at(deps.nowMs() + inMs, () =>
        stop.abort(new Error('deadline passed')),
      );
    }
    const base: LlmRequest = {
      id: r.id,
      arrivalMs: deps.nowMs(),
      inputTokens: r.inputTokens,
      outputTokens: 0,
      maxTokens: r.maxTokens,
      tenant: r.tenantName,
      sloClass: r.sloClass,
      stream,
      model: undefined,
      attempt: headers.attempt,
      idempotencyKey: headers.idempotencyKey,
      deadlineMs:
        headers.deadlineEpochMs === undefined
          ? undefined
          : deps.nowMs() + (headers.deadlineEpochMs - deps.epochMs()),
    };
    const tries = deps.maxUpstreamTries ?? 2;
    // What the tenant's token bucket is settled to; a backend that reports no prompt count
    // keeps the estimate's.
    const used = (end: StreamEnd) => (end.promptTokens || r.inputTokens) + end.completionTokens;
    let failedOn = -1;
    for (let attempt = 0; ; attempt++) {
      const req = attempt === 0 ? base : { ...base, attempt: headers.attempt + attempt };
      const admitted = await deps.gateway.admit(req, upstream, failedOn);
      if (admitted.kind === 'rejected') {
        const d = admitted.decision;
        return final(tagged(refusal(d.reason, d.status, d.retryAfterMs), base.id));
      }
      if (admitted.kind !== 'dispatched')
        return final(tagged(refusal('deadline', 503, 1_000), base.id));
      const ticket = admitted.ticket;
      const relay = new TokenRelay();
      const done = deps.gateway.run(
        ticket,
        kind,
        json as Record<string, unknown>,
        upstream,
        relay.sink,
      );
      // The answer is chosen at the first token, or when the stream ended or failed before one.
      const e = await Promise.race([
        relay.first.then(() => undefined),
        done.then(
          () => undefined,
          (e: unknown) => e ?? new Error('the stream failed'),
        ),
      ]);
      if (e !== undefined) {
        if (isUpstreamError(e) && e.beforeFirstToken && attempt + 1 < tries && !upstream.aborted) {
          failedOn = ticket.replica;
          continue;
        }
        if (isUpstreamError(e))
          return final(
            errorResponse(
              new OpenAiError(
                502,
                'the upstream failed before the first token',
                null,
                'upstream_error',
              ),
            ),
          );
        throw e;
      }
      const degraded =
        ticket.decision.outcome === 'admit' ? ticket.decision.degradation : undefined;
      const extra: Record<string, string> = { 'x-goodput-request-id': base.id };
      if (degraded !== undefined) extra['x-goodput-degraded'] = `level-${degraded.level}`;
      const head = {
        id: `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${ticket.req.id}`,
        created: Math.floor(deps.epochMs() / 1000),
        model: parsed.model,
      };
      if (stream) {
        const response = streamResponse(
          kind,
          head,
          includeUsage(parsed),
          relay,
          done,
          extra,
          degraded?.level,
          (end) => {
            deadline?.cancel();
            raw.signal.removeEventListener('abort', clientGone);
            return r.pass.end(undefined, end && used(end));
          },
          () => stop.abort(new Error('the client stopped reading')),
          r.outgoing,
        );
        streaming = true;
        return { response, streaming: true };
      }
      const res = await wholeResponse(kind, head, relay, done, degraded?.level);
      const body = JSON.stringify(res);
      const out = { status: 200, body, headers: { 'content-type': 'application/json', ...extra } };
      return {
        response: new Response(out.body, { status: 200, headers: out.headers }),
        streaming: false,
        keep: headers.idempotencyKey === undefined ? undefined : out,
        usedTokens: used(await done),
      };
    }
  }
}
