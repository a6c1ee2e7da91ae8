/**
 * A request's trace in OpenTelemetry spans (the rules are request-trace.ts's). The request's is a
 * SERVER span named by its route, carrying the GenAI attributes of the whole request — model,
 * output cap, usage, finish reasons, response id — and Goodput's (class, tenant, decision,
 * reason, TTFT, queue time); usage is on it alone, so a backend that sums tokens over spans
 * counts a request once. Its children, in order: `admission` and `queue` (INTERNAL) for each
 * attempt, and the attempt itself, a CLIENT span named as the GenAI conventions name an
 * inference call (`chat llama-3-8b`), with its backend, server.address and server.port, its
 * outcome, and a `first_token` event. An error status carries the closed-enum reason; open
 * children end with the request, so no span is left open. Context is passed explicitly: no
 * global context manager is read or set.
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type AttributeValue,
  type Attributes,
  type Context,
  type HrTime,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
} from '@opentelemetry/semantic-conventions';
import type { DecisionResult } from '../../core/observe/decision-record.ts';
import type { RejectReason } from '../../core/request/decision.ts';
import type { LlmRequest } from '../../core/request/request.ts';
import type { Ms } from '../../core/request/units.ts';
import type { Backend, Endpoint, StreamEnd } from '../backend.ts';
import { answerId } from '../../openai/index.ts';
import * as A from './gen-ai.ts';
import type { AttemptOutcome, AttemptTrace, HeaderReader, RequestTrace } from './request-trace.ts';
import {
  TRACEPARENT,
  TRACESTATE,
  remoteParent,
  traceHeaders,
  type TraceHeaders,
} from './trace-context.ts';

const ROUTES: Readonly<Record<Endpoint, string>> = {
  chat: '/v1/chat/completions',
  completion: '/v1/completions',
  responses: '/v1/responses',
};

/** Clock ms as the span time OpenTelemetry takes. */
export type SpanTime = (atMs: Ms) => HrTime;

/** Sets the attributes that have a value; OpenTelemetry warns of the others. */
function set(span: Span, attributes: Record<string, AttributeValue | undefined>): void {
  for (const [key, value] of Object.entries(attributes)) {
    if (value !== undefined) span.setAttribute(key, value);
  }
}

function fail(span: Span, reason: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: reason });
  span.setAttribute(ATTR_ERROR_TYPE, reason);
}

export class OtelRequestTrace implements RequestTrace {
  private readonly tracer: Tracer;
  private readonly time: SpanTime;
  private readonly kind: Endpoint;
  private readonly arrivalMs: Ms;
  private readonly span: Span;
  /** The request's span as the parent of its children. */
  private readonly ctx: Context;
  /** The admission or queue span open now, and when the queue began if it is that. */
  private phase: Span | undefined;
  private queuedSinceMs: Ms | undefined;
  private queueMs = 0;
  private attempts = 0;
  private model: string | undefined;
  private ended = false;

  constructor(
    tracer: Tracer,
    time: SpanTime,
    kind: Endpoint,
    requestId: string,
    header: HeaderReader,
    atMs: Ms,
  ) {
    this.tracer = tracer;
    this.time = time;
    this.kind = kind;
    this.arrivalMs = atMs;
    const parent = remoteParent(header(TRACEPARENT), header(TRACESTATE));
    const attributes: Attributes = {
      [ATTR_HTTP_REQUEST_METHOD]: 'POST',
      [ATTR_HTTP_ROUTE]: ROUTES[kind],
      [A.GEN_AI_OPERATION_NAME]: A.OPERATION[kind],
      [A.GOODPUT_REQUEST_ID]: requestId,
    };
    this.span = tracer.startSpan(
      `POST ${ROUTES[kind]}`,
      { kind: SpanKind.SERVER, startTime: time(atMs), attributes },
      parent === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, parent),
    );
    this.ctx = trace.setSpan(ROOT_CONTEXT, this.span);
  }

  read(req: LlmRequest, model: string, targets?: { ttftMs?: Ms; tpotMs?: Ms }): void {
    this.model = model;
    set(this.span, {
      [A.GEN_AI_REQUEST_MODEL]: model,
      [A.GEN_AI_REQUEST_MAX_TOKENS]: req.maxTokens,
      [A.GEN_AI_REQUEST_STREAM]: req.stream,
      [A.GEN_AI_CONVERSATION_ID]: req.session,
      [A.GOODPUT_CLASS]: req.sloClass,
      [A.GOODPUT_TENANT]: req.tenant,
      [A.GOODPUT_TARGET_TTFT_MS]: targets?.ttftMs,
      [A.GOODPUT_TARGET_TPOT_MS]: targets?.tpotMs,
    });
  }

  admitting(atMs: Ms): void {
    this.close(atMs);
    this.phase = this.child('admission', SpanKind.INTERNAL, atMs);
  }

  decided(result: DecisionResult, reason: RejectReason | undefined, atMs: Ms): void {
    const labels = { [A.GOODPUT_DECISION]: result, [A.GOODPUT_REASON]: reason };
    set(this.span, labels);
    const admission = this.phase;
    if (admission === undefined) return;
    set(admission, labels);
    if (result === 'reject') fail(admission, reason ?? result);
    admission.end(this.time(atMs));
    this.phase = undefined;
    if (result === 'reject') return;
    this.phase = this.child('queue', SpanKind.INTERNAL, atMs);
    this.queuedSinceMs = atMs;
  }

  dequeued(atMs: Ms, why?: string): void {
    const queue = this.phase;
    if (queue === undefined || this.queuedSinceMs === undefined) return;
    const waited = atMs - this.queuedSinceMs;
    this.queueMs += waited;
    queue.setAttribute(A.GOODPUT_QUEUE_MS, waited);
    this.span.setAttribute(A.GOODPUT_QUEUE_MS, this.queueMs);
    if (why !== undefined) {
      queue.setAttribute(A.GOODPUT_REASON, why);
      fail(queue, why);
    }
    queue.end(this.time(atMs));
    this.phase = undefined;
    this.queuedSinceMs = undefined;
  }

  attempt(backend: Backend, req: LlmRequest, atMs: Ms): AttemptTrace {
    this.close(atMs);
    this.attempts++;
    const model = req.model ?? this.model ?? '';
    const span = this.child(`${A.OPERATION[this.kind]} ${model}`, SpanKind.CLIENT, atMs);
    set(span, {
      [A.GEN_AI_OPERATION_NAME]: A.OPERATION[this.kind],
      [A.GEN_AI_REQUEST_MODEL]: model,
      [A.GEN_AI_REQUEST_MAX_TOKENS]: req.maxTokens,
      [A.GEN_AI_RESPONSE_ID]: this.responseId(req),
      [ATTR_SERVER_ADDRESS]: backend.server?.address,
      [ATTR_SERVER_PORT]: backend.server?.port,
      [A.GOODPUT_BACKEND]: backend.name,
      [A.GOODPUT_ATTEMPT]: this.attempts,
    });
    return new OtelAttempt(this, span, req, atMs, this.time);
  }

  answered(status: number, reason: string | undefined): void {
    this.span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
    if (status >= 400) this.cut(reason ?? String(status));
  }

  cut(reason: string): void {
    this.span.setAttribute(A.GOODPUT_REASON, reason);
    fail(this.span, reason);
    if (this.phase !== undefined) fail(this.phase, reason);
  }

  end(atMs: Ms): void {
    if (this.ended) return;
    this.ended = true;
    this.close(atMs);
    this.span.end(this.time(atMs));
  }

  /** From an attempt: its first token, and the end of a stream that ran its course. */
  firstToken(atMs: Ms): void {
    this.span.setAttribute(A.GOODPUT_TTFT_MS, atMs - this.arrivalMs);
  }

  served(req: LlmRequest, end: StreamEnd): void {
    set(this.span, {
      [A.GEN_AI_RESPONSE_ID]: this.responseId(req),
      [A.GEN_AI_RESPONSE_FINISH_REASONS]: [end.finishReason],
      // A backend that reports no prompt count leaves the estimate, as the gateway charges it.
      [A.GEN_AI_USAGE_INPUT_TOKENS]: end.promptTokens || req.inputTokens,
      [A.GEN_AI_USAGE_OUTPUT_TOKENS]: end.completionTokens,
    });
  }

  private responseId(req: LlmRequest): string {
    return answerId(this.kind, req.id);
  }

  private child(name: string, kind: SpanKind, atMs: Ms): Span {
    return this.tracer.startSpan(name, { kind, startTime: this.time(atMs) }, this.ctx);
  }

  /** Ends a phase left open (a request that ended while it waited). */
  private close(atMs: Ms): void {
    if (this.phase === undefined) return;
    if (this.queuedSinceMs !== undefined) this.dequeued(atMs);
    else this.phase.end(this.time(atMs));
    this.phase = undefined;
  }
}

class OtelAttempt implements AttemptTrace {
  readonly headers: TraceHeaders;
  private readonly request: OtelRequestTrace;
  private readonly span: Span;
  private readonly req: LlmRequest;
  private readonly startMs: Ms;
  private readonly time: SpanTime;

  constructor(request: OtelRequestTrace, span: Span, req: LlmRequest, startMs: Ms, time: SpanTime) {
    this.request = request;
    this.span = span;
    this.req = req;
    this.startMs = startMs;
    this.time = time;
    this.headers = traceHeaders(span.spanContext());
  }

  firstToken(atMs: Ms): void {
    this.span.addEvent('first_token', this.time(atMs));
    this.span.setAttribute(A.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, (atMs - this.startMs) / 1000);
    this.request.firstToken(atMs);
  }

  ended(end: StreamEnd, atMs: Ms): void {
    this.span.setAttribute(A.GOODPUT_ATTEMPT_OUTCOME, 'completed');
    this.span.setAttribute(A.GEN_AI_RESPONSE_FINISH_REASONS, [end.finishReason]);
    this.request.served(this.req, end);
    this.span.end(this.time(atMs));
  }

  failed(outcome: AttemptOutcome, cause: string, status: number | undefined, atMs: Ms): void {
    this.span.setAttribute(A.GOODPUT_ATTEMPT_OUTCOME, outcome);
    if (status !== undefined) this.span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
    fail(this.span, cause);
    this.span.end(this.time(atMs));
  }
}
