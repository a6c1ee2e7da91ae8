/**
 * The gauges a scrape reads of the gateway's queue, fair shares and backends' pace: how many
 * wait, their queued work and earliest slack, the oldest wait, each tenant's deviation from its
 * weighted share of the service so far, and each backend's step time against its profile as flow
 * control measures it. Refreshed on each scrape (the queue's also on the pump's tick while work
 * waits).
 */
import type { Pipeline } from '../core/pipeline.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';

export function observeQueue<T>(pipeline: Pipeline<T>, m: GatewayMetrics, now: number): void {
  let count = 0;
  let work = 0;
  let slack = Infinity;
  let oldest = Infinity;
  for (const t of pipeline.dispatcher.waitingTickets()) {
    count++;
    work += t.demand.workP90Ms;
    slack = Math.min(slack, t.expiresMs - now);
    oldest = Math.min(oldest, t.offeredMs);
  }
  m.queued.set(count);
  m.queuedWork.set(work / 1000);
  m.earliestSlack.set(slack / 1000);
  m.queueAge.set(Number.isFinite(oldest) ? (now - oldest) / 1000 : 0);
}

export function observeShares<T>(pipeline: Pipeline<T>, m: GatewayMetrics): void {
  let total = 0;
  let weights = 0;
  const served = [...pipeline.vtc.entries()].filter((e) => e.service > 0);
  for (const e of served) {
    total += e.service;
    weights += e.weight;
  }
  if (total === 0) return;
  for (const e of served) {
    m.shareDeviation.set({ tenant: m.tenant(e.tenant) }, e.service / total - e.weight / weights);
  }
}

/** Each backend's pace (`core/routing/step-pace.ts`); backends not yet in the ledger are at 1. */
export function observePace<T>(
  pipeline: Pipeline<T>,
  m: GatewayMetrics,
  backends: readonly { readonly name: string }[],
): void {
  const accounts = pipeline.dispatcher.ledger.replicas;
  backends.forEach((b, i) => m.backendPace.set({ backend: b.name }, accounts[i]?.pace ?? 1));
}
