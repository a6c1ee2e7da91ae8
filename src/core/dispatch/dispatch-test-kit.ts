// A fleet spec for dispatch tests: one 8K-context model, 256 slots, 1M KV tokens a replica, and
// whatever step time the test gives.
import type { FleetSpec } from '../estimate/fleet-spec.ts';
import type { StepTimeModel } from '../ports/step-time.ts';

export function testSpec(stepMs: StepTimeModel['stepMs'], o: Partial<FleetSpec> = {}): FleetSpec {
  return {
    model: 'm',
    adapters: [],
    maxModelLen: 8_192,
    maxBatchedTokens: 8_192,
    maxNumSeqs: 256,
    kvBytesPerToken: 1_000,
    replicaKvTokens: 1_000_000,
    stepTime: { stepMs },
    ...o,
  };
}
