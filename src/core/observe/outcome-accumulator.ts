/**
 * Folds request outcomes into the counts and samples a report needs, one outcome at a time, so
 * a million-request run never holds a million outcome objects. Offered and admitted
 * denominators are both kept: shedding load must never read as success.
 */
import type { SloClass, SloClassName } from '../request/slo-classes.ts';
import { FloatList } from '../stats/float-list.ts';
import { firstMiss } from './slo-judge.ts';
import { tpotMs, type FinalState, type RequestOutcome } from './request-outcome.ts';

/** Virtual-token-counter weights: a generated token costs more than a prompt token (VTC). */
export const SERVICE_WEIGHTS = { input: 1, output: 2 } as const;

export interface GroupCounts {
  offered: number;
  admitted: number;
  completed: number;
  good: number;
  goodOutputTokens: number;
  service: number;
  /** The longest a completed request waited in the control plane's queue (its starvation age). */
  maxQueueMs: number;
  /** Times its requests were preempted in the engine. */
  preemptions: number;
  /** Admitted requests that were not good, by the first objective they missed. */
  admittedMisses: Record<string, number>;
}

function emptyGroup(): GroupCounts {
  return {
    offered: 0,
    admitted: 0,
    completed: 0,
    good: 0,
    goodOutputTokens: 0,
    service: 0,
    maxQueueMs: 0,
    preemptions: 0,
    admittedMisses: {},
  };
}

export class OutcomeAccumulator {
  readonly states: Record<FinalState, number> = {
    completed: 0,
    failed: 0,
    cancelled: 0,
    rejected: 0,
    running: 0,
  };
  readonly rejectReasons = new Map<string, number>();
  /** Requests that waited in the deferred queue, and those degraded, by level. */
  deferred = 0;
  readonly degradedByLevel = new Map<string, number>();
  readonly failReasons = new Map<string, number>();
  readonly byClass = new Map<SloClassName, GroupCounts>();
  readonly byTenant = new Map<string, GroupCounts>();
  readonly total = emptyGroup();
  offeredInputTokens = 0;
  /** Output tokens of the requests that completed. */
  outputTokens = 0;
  attempts = 0;
  preemptions = 0;
  cachedTokens = 0;
  readonly ttft = new FloatList();
  readonly tpot = new FloatList();
  readonly e2e = new FloatList();
  readonly maxStall = new FloatList();
  readonly queue = new FloatList();
  readonly prefill = new FloatList();
  readonly firstDecode = new FloatList();
  /** Per-class TTFT samples, for the class breakdown. */
  readonly ttftByClass = new Map<SloClassName, FloatList>();
  private readonly classes: Readonly<Record<SloClassName, SloClass>>;

  constructor(classes: Readonly<Record<SloClassName, SloClass>>) {
    this.classes = classes;
  }

  add(o: RequestOutcome): void {
    const miss = firstMiss(o, this.classes[o.sloClass].objectives);
    const good = miss === null;
    // Served once an engine began its prompt: one admitted that expired or was cancelled in
    // the queue was served nothing.
    const service =
      o.queueMs !== undefined
        ? SERVICE_WEIGHTS.input * o.inputTokens + SERVICE_WEIGHTS.output * o.outputTokens
        : 0;
    for (const group of [
      this.total,
      groupOf(this.byClass, o.sloClass),
      groupOf(this.byTenant, o.tenant),
    ]) {
      group.offered++;
      if (o.admitted) group.admitted++;
      if (o.state === 'completed') group.completed++;
      if (good) {
        group.good++;
        group.goodOutputTokens += o.outputTokens;
      }
      group.service += service;
      group.preemptions += o.preemptions;
      if (o.admitted && miss !== null) {
        group.admittedMisses[miss] = (group.admittedMisses[miss] ?? 0) + 1;
      }
    }
    this.states[o.state]++;
    if (o.rejectReason !== undefined) bump(this.rejectReasons, o.rejectReason);
    if (o.deferred === true) this.deferred++;
    if (o.degradeLevel !== undefined) bump(this.degradedByLevel, `level_${o.degradeLevel}`);
    if (o.failReason !== undefined) bump(this.failReasons, o.failReason);
    this.offeredInputTokens += o.inputTokens;
    this.attempts += o.attempts;
    this.preemptions += o.preemptions;
    this.cachedTokens += o.cachedTokens;
    if (o.state !== 'completed') return;
    // Output throughput and latency samples come from successful requests only, as in vLLM's
    // benchmark client: tokens of a stream cancelled or failed are no one's answer.
    this.outputTokens += o.outputTokens;
    if (o.ttftMs !== undefined) {
      this.ttft.push(o.ttftMs);
      let list = this.ttftByClass.get(o.sloClass);
      if (list === undefined) this.ttftByClass.set(o.sloClass, (list = new FloatList()));
      list.push(o.ttftMs);
    }
    if (o.e2eMs !== undefined) this.e2e.push(o.e2eMs);
    const tpot = tpotMs(o);
    if (tpot !== undefined) this.tpot.push(tpot);
    if (o.maxStallMs !== undefined) this.maxStall.push(o.maxStallMs);
    if (o.queueMs !== undefined) {
      this.queue.push(o.queueMs);
      const cls = groupOf(this.byClass, o.sloClass);
      if (o.queueMs > cls.maxQueueMs) cls.maxQueueMs = o.queueMs;
    }
    if (o.prefillMs !== undefined) this.prefill.push(o.prefillMs);
    if (o.firstDecodeMs !== undefined) this.firstDecode.push(o.firstDecodeMs);
  }
}

function groupOf<K>(map: Map<K, GroupCounts>, key: K): GroupCounts {
  let group = map.get(key);
  if (group === undefined) map.set(key, (group = emptyGroup()));
  return group;
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}
