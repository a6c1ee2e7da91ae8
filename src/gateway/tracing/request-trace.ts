/**
 * A request's trace as the gateway writes it: one span for the request, a child for each
 * attempt's admission (the shared-state door, then the pipeline's decision) and its wait in the
 * queue, and one for each upstream attempt — every retry or failover its own, naming its
 * backend and outcome — with the first token an event on the attempt that produced it. The
 * gateway calls these at each step and knows nothing of spans; what they write is the
 * implementation's: OpenTelemetry (otel-request-trace.ts, exported by otlp-tracer.ts), or
 * nothing at all, the default (`NO_TRACING`). Rules: times are the gateway clock's ms; each
 * call takes only what the gateway holds anyway, so with tracing off a request allocates
 * nothing for it; `end` comes once, last. A client's W3C trace context is honoured either way:
 * traced, the request's span is its child and each attempt's span is the backend's parent;
 * untraced, it goes to the backend as it came.
 */
import type { DecisionResult } from '../../core/observe/decision-record.ts';
import type { RejectReason } from '../../core/request/decision.ts';
import type { LlmRequest } from '../../core/request/request.ts';
import type { Ms } from '../../core/request/units.ts';
import type { Backend, Endpoint, StreamEnd } from '../backend.ts';
import {
  TRACEPARENT,
  TRACESTATE,
  isTraceparent,
  passedTraceState,
  type TraceHeaders,
} from './trace-context.ts';

export type HeaderReader = (name: string) => string | null;

/** How an upstream attempt ended, as its span's `goodput.attempt.outcome`. */
export type AttemptOutcome = 'completed' | 'failed' | 'rejected' | 'stopped';

export interface RequestTracer {
  /** A request arrived: its trace, a child of the client's `traceparent` when it sent one. */
  start(kind: Endpoint, requestId: string, header: HeaderReader, atMs: Ms): RequestTrace;
  /** Sends the spans that ended so far. */
  flush(): Promise<void>;
  /** Sends what it holds, then stops: the gateway calls it last when it closes. */
  close(): Promise<void>;
}

export interface RequestTrace {
  /** What the request is, once read: the model it named, its output cap, class and tenant. */
  read(req: LlmRequest, model: string, targets?: { ttftMs?: Ms; tpotMs?: Ms }): void;
  /** An attempt's admission begins: the door (the first attempt's), then the pipeline. */
  admitting(atMs: Ms): void;
  /** The pipeline decided: admission ends; an admitted request's wait in the queue begins. */
  decided(result: DecisionResult, reason: RejectReason | undefined, atMs: Ms): void;
  /** The wait ended: dispatched, or `why` not (expired, stopped). */
  dequeued(atMs: Ms, why?: string): void;
  /** The request goes to `backend` (`req`: as served): the attempt's span begins. */
  attempt(backend: Backend, req: LlmRequest, atMs: Ms): AttemptTrace;
  /** The answer chosen: 400 and over is the span's error, `reason` (x-goodput-reason) why. */
  answered(status: number, reason: string | undefined): void;
  /** A stream that had answered 200 was cut (`reason`: what cut it). */
  cut(reason: string): void;
  /** The request is over, its last byte sent: its span ends, and anything still open. */
  end(atMs: Ms): void;
}

export interface AttemptTrace {
  /** The W3C trace context the backend is sent, if any. */
  readonly headers: TraceHeaders | undefined;
  firstToken(atMs: Ms): void;
  /** The stream ran to its end: its usage and finish reason are the request's. */
  ended(end: StreamEnd, atMs: Ms): void;
  /** It did not: `cause` is the stop or the upstream's error, `status` its HTTP status if any. */
  failed(outcome: AttemptOutcome, cause: string, status: number | undefined, atMs: Ms): void;
}

/** An attempt that writes nothing, and sends the backend the client's own context (or none). */
class Untraced implements AttemptTrace, RequestTrace {
  readonly headers: TraceHeaders | undefined;
  constructor(headers: TraceHeaders | undefined) {
    this.headers = headers;
  }
  read(): void {}
  admitting(): void {}
  decided(): void {}
  dequeued(): void {}
  attempt(): AttemptTrace {
    return this;
  }
  answered(): void {}
  cut(): void {}
  end(): void {}
  firstToken(): void {}
  ended(): void {}
  failed(): void {}
}

const NOTHING = new Untraced(undefined);

/** A request not traced, and with no trace context to pass on. */
export const UNTRACED: RequestTrace = NOTHING;

/** Tracing off: nothing is written; a client's trace context still reaches the backend. */
export const NO_TRACING: RequestTracer = {
  start(_kind, _id, header) {
    const traceparent = header(TRACEPARENT);
    if (traceparent === null || !isTraceparent(traceparent)) return NOTHING;
    const tracestate = passedTraceState(header(TRACESTATE));
    return new Untraced(tracestate === undefined ? { traceparent } : { traceparent, tracestate });
  },
  flush: async () => {},
  close: async () => {},
};
