/**
 * Replays a loaded trace window as requests. Sizes, prefixes, sessions and any tenant or class
 * come from the row; a row without a tenant or class draws one from the workload's specs, from
 * their own streams, so tenants stay the same when the class mix changes. Requests are made as
 * the consumer pulls, and every iteration yields the identical sequence.
 */
import type { Rng } from '../../../core/ports/rng.ts';
import type { LlmRequest } from '../../../core/request/request.ts';
import { classSampler, type ClassSpec } from '../class-spec.ts';
import { requestId } from '../request-id.ts';
import { WORKLOAD_STREAMS as S } from '../streams.ts';
import { tenantSampler, type TenantSpec } from '../tenant-spec.ts';
import type { TraceTable } from './trace-table.ts';
import { scaledArrival, type TraceWindow } from './trace-window.ts';

export interface TracePlan {
  readonly table: TraceTable;
  readonly window: TraceWindow;
  readonly rateScale: number;
  /** Arrival times replacing the recorded ones (a re-timed trace), one per window row. */
  readonly arrivalsMs?: Float64Array;
  readonly tenants: TenantSpec;
  readonly classes: ClassSpec;
}

export function traceRequests(plan: TracePlan, rng: Rng): Iterable<LlmRequest> {
  return { [Symbol.iterator]: () => generate(plan, rng) };
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

function* generate(plan: TracePlan, rng: Rng): Generator<LlmRequest> {
  const { table, window, rateScale } = plan;
  const tenant = tenantSampler(plan.tenants, rng.fork(S.tenants));
  const sloClass = classSampler(plan.classes, rng.fork(S.classes));
  for (let i = window.from; i < window.to; i++) {
    const x = table.extras?.[i];
    const request: Mutable<LlmRequest> = {
      id: requestId(i - window.from + 1),
      arrivalMs:
        plan.arrivalsMs?.[i - window.from] ?? scaledArrival(table.tMs[i], window, rateScale),
      inputTokens: table.inputTokens[i],
      outputTokens: table.outputTokens[i],
      tenant: x?.tenant ?? tenant(),
      sloClass: x?.sloClass ?? sloClass(),
    };
    if (x?.maxTokens !== undefined) request.maxTokens = x.maxTokens;
    if (x?.session !== undefined) request.session = x.session;
    if (x?.prefix !== undefined) request.prefix = x.prefix;
    if (x?.toolCalls !== undefined) request.toolCalls = x.toolCalls;
    if (x?.timeoutMs !== undefined) request.deadlineMs = request.arrivalMs + x.timeoutMs;
    if (x?.choices !== undefined) request.choices = x.choices;
    yield request;
  }
}
