/**
 * Request traces exported over OTLP/HTTP (JSON) to a collector, as `goodput serve
 * --otlp-endpoint` asks: an OpenTelemetry tracer provider of the gateway's own (never the global
 * one), spans batched and sent in the background. Its times are the gateway clock's, set on every
 * span, and its ids come from the runtime's entropy: nothing here reads a clock or a random
 * source of its own. The sampler is OpenTelemetry's default, parent-based: a client that sent an
 * unsampled `traceparent` has its request untraced, as its own service chose. A collector that
 * cannot be reached costs the gateway nothing but the spans: the failure, and the recovery, are
 * each one line in the operational log. `close` sends what is left before the process exits.
 */
import type { HrTime } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  TracerProvider,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { Clock } from '../../core/ports/clock.ts';
import type { Ms } from '../../core/request/units.ts';
import type { OpsLog } from '../ops-log.ts';
import { OtelRequestTrace } from './otel-request-trace.ts';
import type { RequestTracer } from './request-trace.ts';

export interface OtlpTracerOptions {
  /** The collector's OTLP/HTTP traces URL (otlp-endpoint.ts). */
  readonly endpoint: string;
  readonly serviceName: string;
  readonly clock: Clock;
  /** Unix ms now, to place the clock's ms on the calendar. */
  readonly epochMs: () => number;
  /** `bytes` random bytes as hex. */
  readonly randomHex: (bytes: number) => string;
  readonly log: OpsLog;
}

/**
 * How long one export may take: with the drain before it, shutdown must fit Kubernetes' grace
 * period (30 s by default), so a collector that does not answer is given up on sooner than the
 * exporter's default 10 s.
 */
const EXPORT_TIMEOUT_MS = 5_000;

export function otlpTracer(o: OtlpTracerOptions): RequestTracer {
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: o.serviceName }),
    idGenerator: {
      generateTraceId: () => o.randomHex(16),
      generateSpanId: () => o.randomHex(8),
    },
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: reported(
          new OTLPTraceExporter({ url: o.endpoint, timeoutMillis: EXPORT_TIMEOUT_MS }),
          o.endpoint,
          o.log,
        ),
        exportTimeoutMillis: EXPORT_TIMEOUT_MS,
      }),
    ],
  });
  const tracer = provider.getTracer('goodput');
  const offsetMs = o.epochMs() - o.clock.now();
  const time = (atMs: Ms): HrTime => {
    const epoch = atMs + offsetMs;
    const seconds = Math.floor(epoch / 1000);
    return [seconds, Math.min(999_999_999, Math.round((epoch - seconds * 1000) * 1e6))];
  };
  return {
    start: (kind, requestId, header, atMs) =>
      new OtelRequestTrace(tracer, time, kind, requestId, header, atMs),
    flush: () => provider.forceFlush(),
    // A collector that does not answer the last export costs its spans, never the shutdown.
    close: () =>
      provider.shutdown().catch((e: unknown) => {
        const cause = e instanceof Error ? e.message : String(e);
        o.log.warn(
          { endpoint: o.endpoint, cause },
          'trace export at shutdown failed: spans dropped',
        );
      }),
  };
}

/** `exporter`, with its failures and its recovery told to the operational log once each. */
function reported(exporter: SpanExporter, endpoint: string, log: OpsLog): SpanExporter {
  let failing = false;
  return {
    export(spans: ReadableSpan[], done) {
      exporter.export(spans, (result) => {
        // 0 is success in OpenTelemetry's ExportResultCode.
        const ok = result.code === 0;
        if (!ok && !failing) {
          const cause = result.error?.message ?? 'export failed';
          log.warn({ endpoint, cause, spans: spans.length }, 'trace export failed: spans dropped');
        } else if (ok && failing) log.info({ endpoint }, 'trace export works again');
        failing = !ok;
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}
