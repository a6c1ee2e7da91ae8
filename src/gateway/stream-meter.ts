/**
 * Measures one request as its client sees it through the gateway — TTFT from arrival, every
 * token gap (its p99 exactly, via the kept tail), end to end — and judges it against its class,
 * with vLLM's definitions, exactly as the simulator's reports do.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { SloClass } from '../core/request/slo-classes.ts';
import type { Ms } from '../core/request/units.ts';
import { firstMiss, type Miss } from '../core/observe/slo-judge.ts';
import { TailSamples } from '../core/observe/tail-samples.ts';
import type { RequestOutcome } from '../core/observe/request-outcome.ts';
import type { LlmRequest } from '../core/request/request.ts';

export class StreamMeter {
  readonly arrivalMs: Ms;
  firstTokenMs: Ms | undefined;
  lastTokenMs: Ms | undefined;
  tokens = 0;
  private readonly tail: TailSamples;
  private gaps = 0;
  private readonly clock: Clock;

  constructor(clock: Clock, arrivalMs: Ms, maxTokens: number) {
    this.clock = clock;
    this.arrivalMs = arrivalMs;
    this.tail = new TailSamples(Math.max(1, maxTokens - 1));
  }

  /** A token reached the gateway; returns its gap to the previous one (undefined for the first). */
  token(): Ms | undefined {
    const now = this.clock.now();
    this.tokens++;
    if (this.lastTokenMs === undefined) {
      this.firstTokenMs = now;
      this.lastTokenMs = now;
      return undefined;
    }
    const gap = now - this.lastTokenMs;
    this.lastTokenMs = now;
    this.gaps++;
    if (gap > this.tail.floor) this.tail.add(gap);
    return gap;
  }

  /** Why the request missed its class's objectives, or null when it was good. */
  judge(cls: SloClass, completed: boolean): Miss | null {
    return firstMiss(
      {
        id: '',
        tenant: '',
        sloClass: cls.name,
        state: completed ? 'completed' : 'failed',
        admitted: true,
        inputTokens: 0,
        outputTokens: this.tokens,
        cachedTokens: 0,
        ttftMs: this.firstTokenMs === undefined ? undefined : this.firstTokenMs - this.arrivalMs,
        e2eMs: this.lastTokenMs === undefined ? undefined : this.lastTokenMs - this.arrivalMs,
        itlP99Ms: this.gaps > 0 ? this.tail.p99(this.gaps) : undefined,
        attempts: 1,
        preemptions: 0,
      },
      cls.objectives,
    );
  }

  /** The completed request as the measurement sees it (TTFT and E2E from the gateway's arrival). */
  completed(req: LlmRequest, outputTokens: number): RequestOutcome {
    return {
      id: req.id,
      tenant: req.tenant,
      sloClass: req.sloClass,
      state: 'completed',
      admitted: true,
      inputTokens: req.inputTokens,
      outputTokens,
      cachedTokens: 0,
      ...(this.firstTokenMs === undefined ? {} : { ttftMs: this.firstTokenMs - this.arrivalMs }),
      ...(this.lastTokenMs === undefined ? {} : { e2eMs: this.lastTokenMs - this.arrivalMs }),
      attempts: 1,
      preemptions: 0,
    };
  }
}
