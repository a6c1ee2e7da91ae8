/**
 * Queue work across the simulated replicas, sampled at most once a second of simulated time as
 * requests come and go (`QueueSpread`, the report's `routing` figures): how long each replica
 * needs for what it holds — its uncomputed prompt tokens as prefill time, then its sequences'
 * remaining output at its current batch's step time.
 */
import { QueueSpread, type QueueSpreadReport } from '../core/observe/queue-spread.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { FlowControl } from '../core/routing/flow-control.ts';
import type { EngineConfig } from '../engine/engine-types.ts';
import type { Fleet } from './fleet.ts';

const SAMPLE_MS = 1_000;

export class SpreadSampler {
  private readonly spread = new QueueSpread();
  private readonly stepMs: number;
  private nextMs = 0;
  private readonly fleet: Fleet;
  private readonly flow: FlowControl;
  private readonly engine: EngineConfig;
  private readonly clock: Clock;

  constructor(fleet: Fleet, flow: FlowControl, engine: EngineConfig, clock: Clock) {
    this.fleet = fleet;
    this.flow = flow;
    this.engine = engine;
    this.clock = clock;
    this.stepMs = flow.prefillMs(engine.maxBatchedTokens);
  }

  /** Takes a sample unless one was taken less than a second ago. */
  sample(): void {
    const now = this.clock.now();
    if (now < this.nextMs) return;
    this.nextMs = now + SAMPLE_MS;
    const { flow } = this;
    const works = this.fleet.outstanding().map((o) => {
      const decodeMs =
        o.seqs === 0
          ? 0
          : (o.outputTokens / o.seqs) *
            flow.decodeStepMs(Math.min(o.seqs, this.engine.maxNumSeqs), o.contextTokens);
      return flow.prefillMs(o.prefillTokens) + decodeMs;
    });
    this.spread.sample(now, works, this.stepMs);
  }

  report(): QueueSpreadReport {
    return this.spread.report();
  }
}
