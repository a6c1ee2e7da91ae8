// What the autoscaler's window counts as demand: each request as it first arrives, admitted or
// refused, not a client's retry of it, nor a background response handed over by the replica that
// drained (it was counted there).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolvePolicy } from '../core/config/policy.ts';
import type { LlmRequest } from '../core/request/request.ts';
import { ENGINE_DEFAULTS, buildEngineConfig, buildEngineProfile } from '../engine/engine-spec.ts';
import { VirtualClock } from '../runtime/virtual-clock.ts';
import type { Backend, BackendLoad, StreamEnd } from './backend.ts';
import { Gateway } from './gateway.ts';
import { GatewayMetrics } from './gateway-metrics.ts';
import { memoryOpsLog } from './ops-log.ts';
import { fleetSpecFor } from './fleet-spec-for.ts';
import { SHUTTING_DOWN } from './http/refusals.ts';

/** A backend always ready, never called here. */
class Idle implements Backend {
  readonly name = 'b0';
  readonly #clock: VirtualClock;
  constructor(clock: VirtualClock) {
    this.#clock = clock;
  }
  load(): BackendLoad {
    return { ready: true, running: 0, waiting: 0, kvUsage: 0, atMs: this.#clock.now() };
  }
  stream(): Promise<StreamEnd> {
    return Promise.reject(new Error('not called'));
  }
  async close(): Promise<void> {}
}

test('demand is each first arrival: not a retry, nor a background response handed over', async () => {
  const clock = new VirtualClock();
  const spec = { ...ENGINE_DEFAULTS, profile: 'const:step_ms=2' };
  const gateway = new Gateway({
    policy: resolvePolicy({
      name: 't',
      policy_revision: 't@1',
      admission: { type: 'admit-all' },
      routing: { type: 'round-robin' },
    }),
    spec: fleetSpecFor(buildEngineConfig(spec), buildEngineProfile(spec), 'llama-3-8b'),
    backends: [new Idle(clock)],
    clock,
    timers: clock,
    metrics: new GatewayMetrics([]),
    log: memoryOpsLog(),
    autoscale: {
      type: 'goodput',
      limits: {
        minReplicas: 1,
        maxReplicas: 4,
        readyTimeMs: 60_000,
        tickMs: 60_000,
        headroom: 1.5,
        scaleInWindowMs: 300_000,
      },
    },
  });
  let n = 0;
  const asked = (more: Partial<LlmRequest> = {}): LlmRequest => ({
    id: `r${++n}`,
    arrivalMs: clock.now(),
    inputTokens: 10,
    outputTokens: 0,
    tenant: 'default',
    sloClass: 'interactive',
    ...more,
  });
  const signal = new AbortController().signal;
  for (const more of [{}, {}, { attempt: 2 }, { handedOver: true as const }])
    assert.equal((await gateway.admit(asked(more), signal)).kind, 'dispatched');
  const door = { shared: false, unread: false };
  gateway.refuse(asked({ handedOver: true }), SHUTTING_DOWN, door);
  gateway.refuse(asked(), SHUTTING_DOWN, door);
  assert.equal(gateway.scaling?.advisor.window.take(1_000).arrivalRps, 3);
  await gateway.close();
});
