// One tenant-accounting port, used once per request by the simulator and the gateway: the same
// requests against the same quotas get the same answers in both — the simulator predicts what
// the gateway enforces. Tokens are charged once (prompt + max_tokens at the door, settled to
// what was used), concurrency slots once, and nothing is charged a second time by admission.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { policyWith } from './gateway/gateway-kit.ts';
import {
  ENGINE_DEFAULTS,
  buildEngineConfig,
  buildEngineProfile,
} from '../src/engine/engine-spec.ts';
import type { LlmRequest } from '../src/core/request/request.ts';
import type { DecisionRecord } from '../src/core/observe/decision-record.ts';
import { simulate } from '../src/sim/simulation.ts';
import { SeededRng } from '../src/runtime/seeded-rng.ts';
import { startGateway } from '../src/gateway/serve.ts';
import { EmbeddedBackend } from '../src/gateway/embedded-backend.ts';
import { SimulatedBackend } from '../src/engine-server/simulated-backend.ts';
import { NO_FAULTS } from '../src/engine-server/request-plan.ts';
import { shareGptSampler } from '../src/engine-server/engine-app.ts';
import { wallClock } from '../src/runtime/wall-clock.ts';
import { wallTimers } from '../src/runtime/wall-timers.ts';

const spec = { ...ENGINE_DEFAULTS, profile: 'const:step_ms=2' };
const engine = buildEngineConfig(spec);
const profile = buildEngineProfile(spec);
/**
 * The tenant of every keyless request: 5,000 tokens an hour (no refill to speak of in a test),
 * two requests at a time, and `more` quotas.
 */
const quotaPolicy = (more: Record<string, number> = {}) =>
  policyWith({
    tenants: {
      default: {
        quotas: {
          window_ms: 3_600_000,
          tokens_per_window: 5_000,
          max_concurrent_requests: 2,
          ...more,
        },
      },
    },
  });
type Policy = ReturnType<typeof quotaPolicy>;

/** Each step: requests sent at once (prompt tokens, max_tokens), then all finish. */
const STEPS: ReadonlyArray<ReadonlyArray<readonly [prompt: number, maxTokens: number]>> = [
  [[100, 300]],
  [
    [50, 100],
    [50, 100],
    [50, 100],
  ],
  [[1_000, 2_000]],
  [[100, 300]],
  [[100, 300]],
  [[100, 300]],
  [[400, 500]],
  [[100, 300]],
  // Past llama-3-8b's 8,192-token context: no quota could ever serve it.
  [[100, 9_000]],
];

type Answer = string; // 'ok' or the refusal reason

async function throughTheSimulator(policy: Policy): Promise<Answer[][]> {
  const requests: LlmRequest[] = [];
  STEPS.forEach((step, s) =>
    step.forEach(([inputTokens, maxTokens], i) =>
      requests.push({
        id: `s${s}-${i}`,
        arrivalMs: s * 10_000,
        inputTokens,
        outputTokens: maxTokens,
        maxTokens,
        tenant: 'default',
        sloClass: 'batch',
      }),
    ),
  );
  const answers = new Map<string, Answer>();
  const onDecision = (r: DecisionRecord) => {
    const result = r.admission.result;
    if (result === 'reject') answers.set(r.request_id, r.admission.reason ?? 'reject');
    else if (!answers.has(r.request_id)) answers.set(r.request_id, 'ok');
  };
  simulate({
    seed: 1,
    rng: new SeededRng(1),
    policy,
    requests,
    replicas: 1,
    engine,
    profile,
    client: { maxAttempts: 1, retryMode: 'disciplined', backoffBaseMs: 500, backoffCapMs: 30_000 },
    scenario: {},
    wallClock: { now: () => 0 },
    onDecision,
  });
  return STEPS.map((step, s) => step.map((_, i) => answers.get(`s${s}-${i}`) ?? 'none'));
}

async function throughTheGateway(policy: Policy): Promise<Answer[][]> {
  const timers = wallTimers(wallClock);
  const rng = new SeededRng(1);
  const g = await startGateway({
    policy,
    engine,
    profile,
    servedModelName: 'llama-3-8b',
    backendUrls: [],
    embedded: () => [
      new EmbeddedBackend(
        'embedded-0',
        new SimulatedBackend({
          config: engine,
          profile,
          clock: wallClock,
          timers,
          rng: rng.fork('replica-0'),
          faults: NO_FAULTS,
          lengths: shareGptSampler(),
        }),
        wallClock,
      ),
    ],
    host: '127.0.0.1',
    port: 0,
  });
  try {
    const out: Answer[][] = [];
    for (const step of STEPS) {
      const answers = await Promise.all(
        step.map(async ([prompt, maxTokens]) => {
          // A token-id prompt: its size is exact, as the simulator's is.
          const res = await fetch(`${g.url}/v1/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-goodput-class': 'batch' },
            body: JSON.stringify({
              model: 'llama-3-8b',
              prompt: Array.from({ length: prompt }, (_, i) => i % 1000),
              max_tokens: maxTokens,
              ignore_eos: true,
            }),
          });
          await res.text();
          return res.status === 200 ? 'ok' : (res.headers.get('x-goodput-reason') ?? 'none');
        }),
      );
      out.push(answers);
    }
    return out;
  } finally {
    await g.close();
  }
}

// Requests sent at once are identical, and which of them the gateway reads first is the
// kernel's choice (connections spread over its listening sockets), so a step's answers are
// compared as a set: how many were served and what refused the rest.
const asSets = (steps: Answer[][]): Answer[][] => steps.map((answers) => [...answers].sort());

test('the simulator and the gateway answer the same requests the same way under one tenant quota', async () => {
  const policy = quotaPolicy();
  const simulated = asSets(await throughTheSimulator(policy));
  const live = asSets(await throughTheGateway(policy));
  assert.deepEqual(live, simulated);
  // And the quota binds where it should: charged once each, settled to what was used.
  assert.deepEqual(simulated, [
    ['ok'], // 400 of 5,000
    ['ok', 'ok', 'tenant_concurrency'], // two slots; 300 more
    ['ok'], // 3,000: 3,700 used
    ['ok'], // 4,100
    ['ok'], // 4,500
    ['ok'], // 4,900
    ['tenant_tokens'], // 900 more would pass 5,000 (100 left)
    ['tenant_tokens'], // 400 > 100
    ['context_length'], // a 400 before the spent quota's 429, and charged nothing
  ]);
});

test('the simulator and the gateway answer the same requests the same way under a request quota', async () => {
  const policy = quotaPolicy({ requests_per_window: 4 });
  const simulated = asSets(await throughTheSimulator(policy));
  const live = asSets(await throughTheGateway(policy));
  assert.deepEqual(live, simulated);
  // A request refused at the door takes no request; the fifth waits a quarter of an hour, which
  // is longer than any token wait here, so it names the refusal.
  assert.deepEqual(simulated, [
    ['ok'], // 1 of 4
    ['ok', 'ok', 'tenant_concurrency'], // 3
    ['ok'], // 4
    ['tenant_requests'],
    ['tenant_requests'],
    ['tenant_requests'],
    ['tenant_requests'],
    ['tenant_requests'],
    ['context_length'],
  ]);
});
