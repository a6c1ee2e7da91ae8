// Staged prefill through the live gateway on its embedded fleet: engines whose prefill is 0.05 ms
// a token (a 5,000-token prompt whole would stall a step 250 ms, past the 54 ms a step may take
// beside 80 ms token gaps). With streams running on both replicas, a long prompt goes at once in
// 512-token pieces (25.6 ms each, within 60% of the 60 ms budget) instead of waiting for a turn;
// the engine is told the pieces, the decision log names them, and every stream is served. The
// replicas' pace is not measured nor the step share cut by late gaps: on a busy machine either
// rightly sends the prompt whole, and each has tests of its own (flow-control.test.ts,
// gap-at-write.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  buildEngineConfig,
  buildEngineProfile,
  ENGINE_DEFAULTS,
} from '../../src/engine/engine-spec.ts';
import { simulatedFleet } from '../../src/engine-server/simulated-fleet.ts';
import { EmbeddedBackend } from '../../src/gateway/embedded-backend.ts';
import { startGateway } from '../../src/gateway/serve.ts';
import { PRESETS } from '../../src/core/config/presets.ts';
import { resolvePolicy } from '../../src/core/config/policy.ts';
import { wallClock } from '../../src/runtime/wall-clock.ts';
import { wallTimers } from '../../src/runtime/wall-timers.ts';
import {
  decisionRecord,
  MODEL,
  onTeardown,
  postChat,
  runningStreams,
  until,
} from './gateway-kit.ts';

const ADMIN = 'staged-admin';
const LONG = 'word '.repeat(5_000);

test('a long prompt beside young streams goes at once in pieces, and every stream is served', async () => {
  const spec = { ...ENGINE_DEFAULTS, profile: 'const:prefill_ms_per_token=0.05,decode_step_ms=2' };
  const engine = buildEngineConfig(spec);
  const profile = buildEngineProfile(spec);
  const fleet = simulatedFleet({
    config: engine,
    profile,
    clock: wallClock,
    timers: wallTimers(wallClock),
    replicas: 2,
    seed: 1,
  });
  const submitted: Array<number | undefined> = [];
  for (const sim of fleet) {
    const submit = sim.submit.bind(sim);
    sim.submit = (req) => (submitted.push(req.pieceTokens), submit(req));
  }
  const g = await startGateway({
    policy: resolvePolicy({
      ...PRESETS.goodput,
      dispatch: { type: 'flow-control', params: { pace: false, gap_feedback: false } },
    }),
    engine,
    profile,
    servedModelName: MODEL,
    backendUrls: [],
    embedded: () => fleet.map((sim, i) => new EmbeddedBackend(`embedded-${i}`, sim, wallClock)),
    host: '127.0.0.1',
    port: 0,
    shedLagMs: 0,
    adminToken: ADMIN,
  });
  onTeardown(() => g.close());
  await until(async () => (await fetch(`${g.url}/readyz`)).status === 200);
  const streams = runningStreams(g.url, 4, 1_000);
  // The streams are running on both replicas when the long prompt comes.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const long = await postChat(g.url, {
    messages: [{ role: 'user', content: LONG }],
    max_tokens: 20,
    stream: true,
  });
  assert.equal(long.status, 200);
  assert.match(await long.text(), /data: \[DONE\]/);
  assert.deepEqual(await streams, [200, 200, 200, 200]);
  const id = long.headers.get('x-goodput-request-id') ?? '';
  const d = await decisionRecord<{
    admission: { result: string; predicted_wait_ms: number | null };
    route: { staged_piece_tokens: number | null };
  }>(g.url, id, ADMIN);
  assert.equal(d.admission.result, 'admit');
  assert.equal(d.route.staged_piece_tokens, 512);
  assert.equal(d.admission.predicted_wait_ms, 0, 'no turn to wait for');
  assert.deepEqual(
    submitted.filter((p) => p !== undefined),
    [512],
    'the engine was told the pieces, the streams were not staged',
  );
});
