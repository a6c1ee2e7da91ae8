/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) on the wire: a client's `traceparent`
 * and `tracestate` read into the span context a request's span continues, and an attempt's span
 * context written back for the backend. A `traceparent` that is not valid is ignored, as the
 * recommendation says — a trace starts afresh — and never refuses a request: tracing is no part
 * of what the client asked for. Its `tracestate` goes with it or not at all.
 */
import {
  TraceFlags,
  createTraceState,
  isValidSpanId,
  isValidTraceId,
  type SpanContext,
} from '@opentelemetry/api';

export const TRACEPARENT = 'traceparent';
export const TRACESTATE = 'tracestate';

/** What a backend is sent: its parent in the trace. */
export interface TraceHeaders {
  readonly traceparent: string;
  readonly tracestate?: string;
}

// version-traceid-parentid-flags; a later version may add fields after a dash.
const FORMAT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The remote parent a `traceparent` (and its `tracestate`) names; undefined when not valid. */
export function remoteParent(
  traceparent: string | null,
  tracestate: string | null,
): SpanContext | undefined {
  if (traceparent === null) return undefined;
  const m = FORMAT.exec(traceparent.trim());
  if (m === null) return undefined;
  const [, version, traceId, spanId, flags, rest] = m;
  // Version ff is forbidden; version 00 has exactly these four fields.
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (!isValidTraceId(traceId) || !isValidSpanId(spanId)) return undefined;
  return {
    traceId,
    spanId,
    traceFlags: parseInt(flags, 16) & TraceFlags.SAMPLED,
    isRemote: true,
    traceState: tracestate === null ? undefined : createTraceState(tracestate),
  };
}

export function isTraceparent(value: string): boolean {
  return remoteParent(value, null) !== undefined;
}

/**
 * A client's `tracestate` as it is passed on: its valid list members (at most 32, each key and
 * value as the recommendation spells them), as a traced request's is; undefined when none is.
 */
export function passedTraceState(tracestate: string | null): string | undefined {
  if (tracestate === null) return undefined;
  const state = createTraceState(tracestate).serialize();
  return state === '' ? undefined : state;
}

/** The headers that make `ctx` the backend's parent. */
export function traceHeaders(ctx: SpanContext): TraceHeaders {
  const flags = (ctx.traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, '0');
  const traceparent = `00-${ctx.traceId}-${ctx.spanId}-${flags}`;
  const state = ctx.traceState?.serialize();
  return state === undefined || state === '' ? { traceparent } : { traceparent, tracestate: state };
}
