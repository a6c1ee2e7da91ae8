/**
 * The report's `fairness` section: each tenant's weighted service as the queue's virtual token
 * counters charged it (the policy's cost function, labelled by its revision), its share against
 * its weight's share among the tenants served, Jain's index over service per unit of weight, and
 * the longest a request of each class waited in the queue (its starvation age).
 */
import type { GroupCounts } from './outcome-accumulator.ts';
import type { VirtualTokenCounters } from '../queueing/virtual-token-counter.ts';
import type { SloClass } from '../request/slo-classes.ts';

/** What the dispatcher kept of the class contracts over a run. */
export interface ContractRecord {
  readonly workByClass: ReadonlyMap<string, number>;
  readonly passes: Readonly<Record<string, number>>;
  readonly classes: Readonly<Record<string, SloClass>>;
}

const r3 = (x: number) => Math.round(x * 1e3) / 1e3;
const r6 = (x: number) => Math.round(x * 1e6) / 1e6;

/**
 * Jain's fairness index of `xs`: (Σx)² / (n · Σx²), 1 when all are equal, 1/n when one has it
 * all; 1 for an empty or all-zero list.
 */
function jainIndex(xs: readonly number[]): number {
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
  contracts: ContractRecord,
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
  let work = 0;
  for (const w of contracts.workByClass.values()) work += w;
  const classes = [...contracts.workByClass.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, w]) => {
      const c = contracts.classes[name]?.contract;
      return [
        name,
        {
          dispatched_work_share: work > 0 ? r6(w / work) : 0,
          min_share: c?.minShare ?? 0,
          max_share: c?.maxShare ?? 1,
          aging_ms: c?.agingMs ?? null,
          starvation_ms: c?.starvationMs ?? null,
        },
      ];
    });
  return {
    order,
    cost_revision: vtc.cost.revision,
    cost: {
      input_weight: vtc.cost.inputWeight,
      output_weight: vtc.cost.outputWeight,
      kv_gib_second_weight: vtc.cost.kvGibSecondWeight,
    },
    tenants,
    jain_index: r6(jainIndex(served.map((e) => e.service / e.weight))),
    max_queue_wait_ms: Object.fromEntries(maxQueue),
    classes: Object.fromEntries(classes),
    /** Dispatches ahead of a band with work waiting, by the contract that allowed it. */
    contract_passes: {
      starvation: contracts.passes.starvation,
      min_share: contracts.passes.min_share,
      aging: contracts.passes.aging,
      max_share: contracts.passes.max_share,
    },
    priority_inversions: contracts.passes.priority,
  };
}
