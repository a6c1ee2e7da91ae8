/**
 * The report's `fairness` section: each tenant's weighted service as the queue's virtual token
 * counters charged it (the policy's cost function, labelled by its revision), its share against
 * its weight's share among the tenants served, Jain's index over service per unit of weight, and
 * the longest a request of each class waited in the queue (its starvation age).
 */
import type { GroupCounts } from './outcome-accumulator.ts';
import type { VirtualTokenCounters } from '../queueing/virtual-token-counter.ts';

const r3 = (x: number) => Math.round(x * 1e3) / 1e3;
const r6 = (x: number) => Math.round(x * 1e6) / 1e6;

/**
 * Jain's fairness index of `xs`: (Σx)² / (n · Σx²), 1 when all are equal, 1/n when one has it
 * all; 1 for an empty or all-zero list.
 */
export function jainIndex(xs: readonly number[]): number {
  let sum = 0;
  let squares = 0;
  for (const x of xs) {
    sum += x;
    squares += x * x;
  }
  return squares > 0 ? (sum * sum) / (xs.length * squares) : 1;
}

export function fairnessReport(
  order: string,
  vtc: VirtualTokenCounters,
  byClass: ReadonlyMap<string, GroupCounts>,
) {
  const served = [...vtc.entries()]
    .filter((e) => e.service > 0)
    .sort((a, b) => (a.tenant < b.tenant ? -1 : a.tenant > b.tenant ? 1 : 0));
  let service = 0;
  let weights = 0;
  for (const e of served) {
    service += e.service;
    weights += e.weight;
  }
  const tenants = Object.fromEntries(
    served.map((e) => {
      const share = service > 0 ? e.service / service : 0;
      const fair = weights > 0 ? e.weight / weights : 0;
      return [
        e.tenant,
        {
          weight: e.weight,
          virtual_service: r3(e.service),
          share: r6(share),
          fair_share: r6(fair),
          deviation: r6(share - fair),
        },
      ];
    }),
  );
  const maxQueue = [...byClass.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([cls, g]) => [cls, r3(g.maxQueueMs)]);
  return {
    order,
    cost_revision: vtc.cost.revision,
    cost: { input_weight: vtc.cost.inputWeight, output_weight: vtc.cost.outputWeight },
    tenants,
    jain_index: r6(jainIndex(served.map((e) => e.service / e.weight))),
    max_queue_wait_ms: Object.fromEntries(maxQueue),
  };
}
