/**
 * How a running gateway stops, and in what order: `close` at once, `drain` the way Kubernetes
 * expects. Draining, `/readyz` turns 503 and new requests are refused at once; idle keep-alive
 * connections close; background responses still queued are handed to a replica that serves;
 * requests in flight run on for the drain time, then the rest are cut. Closing, answers held for
 * the turn's end are written and the stream readers say where their clients got to before any
 * connection closes; then the listeners, the shedder and background runs, the learned state
 * (saved once every request has ended), the gateway and its fleet, the local pool, the shared
 * store, and last the tracer, so every span has ended when what is batched goes out.
 */
import type { Server } from 'node:http';
import type { Clock } from '../core/ports/clock.ts';
import type { Timers } from '../core/ports/timers.ts';
import type { Ms } from '../core/request/units.ts';
import type { Gateway } from './gateway.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import { heldAnswersWritten } from './http/answer.ts';
import type { BackgroundRuns } from './http/background-runs.ts';
import type { ConnectionIntake } from './http/connection-intake.ts';
import type { InFlight } from './http/in-flight.ts';
import type { LagShedder } from './http/lag-shedder.ts';
import type { Listeners } from './http/listeners.ts';
import type { LearnedPersistence } from './learned-state-store.ts';
import type { OpsLog } from './ops-log.ts';
import type { SharedStore } from './shared/shared-store.ts';
import type { RequestTracer } from './tracing/request-trace.ts';

/** What a gateway holds that must stop, each part as started. */
export interface Running {
  readonly api: Listeners;
  readonly status: Server | undefined;
  readonly intake: ConnectionIntake | undefined;
  readonly shedder: LagShedder;
  readonly background: BackgroundRuns;
  readonly learned: LearnedPersistence | undefined;
  readonly gateway: Gateway;
  readonly pool: { close(): Promise<void> } | undefined;
  readonly store: SharedStore;
  readonly tracer: RequestTracer;
  readonly inFlight: InFlight;
  readonly metrics: GatewayMetrics;
  readonly log: OpsLog;
  readonly clock: Clock;
  readonly timers: Timers;
}

export interface Shutdown {
  drain(timeoutMs: Ms): Promise<{ readonly finished: number; readonly cut: number }>;
  cutNow(): void;
  close(): Promise<void>;
}

export function shutdownOf(r: Running): Shutdown {
  const { api, status, inFlight, background, log } = r;
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      // Requests that ended in this turn have their answers held for its end (answer.ts).
      await heldAnswersWritten();
      // Streams' readers say where their clients got to, before their connections close.
      await background.closeReaders();
      const closed = Promise.all([
        api.close(),
        status && new Promise<void>((resolve) => status.close(() => resolve())),
      ]);
      // Keep-alive clients would hold the server open; their requests are over or abandoned.
      api.closeAllConnections();
      status?.closeAllConnections();
      r.intake?.close();
      await closed;
      r.shedder.stop();
      background.close();
      // Every request has ended: what they taught is in the state saved now.
      await r.learned?.stop();
      await r.gateway.close();
      await r.pool?.close();
      await r.store.close();
      // Last: every request has ended, so every span has, and what is batched goes out now.
      await r.tracer.close();
    })());
  return {
    async drain(timeoutMs) {
      r.metrics.draining.set(1);
      const before = inFlight.size;
      const told = { in_flight: before, timeout_ms: timeoutMs };
      log.info(told, 'draining: not ready, refusing new requests');
      // Idle keep-alive connections would carry new requests here; busy ones close as they end.
      api.closeIdleConnections();
      const drained = inFlight.drainWithin(timeoutMs, r.clock, r.timers); // refusing new requests
      // Background responses still queued go to a replica that serves, if one does.
      const handed = await background.handOver();
      if (!(await drained)) {
        const over = inFlight.cut();
        log.warn({ cut: over }, `drain time over: ${over} request(s) stopped as shutting_down`);
        await inFlight.drain();
      }
      // A second signal may have cut some before the drain time ran out.
      const cut = inFlight.cutCount;
      log.info({ finished: before - cut, cut, handed_over: handed }, 'drained');
      await close();
      return { finished: before - cut, cut };
    },
    cutNow() {
      inFlight.cut();
    },
    close,
  };
}
