/**
 * A synthetic request stream: arrivals from a gamma (or Poisson) process, lengths from specs,
 * tenants and classes from theirs. Requests are made one at a time as the consumer pulls, so a
 * million of them never sit in memory; every iteration re-forks the streams and so yields the
 * identical sequence.
 */
import type { Rng } from '../../core/ports/rng.ts';
import type { LlmRequest } from '../../core/request/request.ts';
import type { SloClassName } from '../../core/request/slo-classes.ts';
import { arrivalClock, type ArrivalProcess } from './arrivals.ts';
import { classSampler, type ClassSpec } from './class-spec.ts';
import { LengthDraw, type LengthTables } from './length-draw.ts';
import type { LengthSpec } from './length-spec.ts';
import { requestId } from './request-id.ts';
import { WORKLOAD_STREAMS as S } from './streams.ts';
import { tenantSampler, type TenantSpec } from './tenant-spec.ts';
import { drawToolCalls, type ToolCallSpec } from './tool-call-spec.ts';

export interface SyntheticPlan {
  readonly arrivals: ArrivalProcess;
  readonly input: LengthSpec;
  readonly output: LengthSpec;
  readonly tenants: TenantSpec;
  readonly classes: ClassSpec;
  /** Every length table the input or output spec names. */
  readonly tables?: LengthTables;
  /** Agent tool calls every request makes, when any. */
  readonly toolCalls?: ToolCallSpec;
}

export function syntheticRequests(plan: SyntheticPlan, rng: Rng): Iterable<LlmRequest> {
  return { [Symbol.iterator]: () => generate(plan, rng) };
}

function* generate(plan: SyntheticPlan, rng: Rng): Generator<LlmRequest> {
  const count = plan.arrivals.count;
  const nextArrival = arrivalClock(plan.arrivals, () => rng.fork(S.arrivals));
  const lengths = new LengthDraw(
    plan.input,
    plan.output,
    rng.fork(S.inputLengths),
    rng.fork(S.outputLengths),
    plan.tables,
  );
  const tenant = tenantSampler(plan.tenants, rng.fork(S.tenants));
  const sloClass: () => SloClassName = classSampler(plan.classes, rng.fork(S.classes));
  const toolRng = rng.fork(S.toolCalls);
  for (let i = 1; i <= count; i++) {
    lengths.next();
    const request: LlmRequest = {
      id: requestId(i),
      arrivalMs: nextArrival(),
      inputTokens: lengths.input,
      outputTokens: lengths.output,
      tenant: tenant(),
      sloClass: sloClass(),
    };
    yield plan.toolCalls === undefined
      ? request
      : { ...request, toolCalls: drawToolCalls(plan.toolCalls, lengths.output, toolRng) };
  }
}
