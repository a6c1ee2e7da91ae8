// Staged prefill to HTTP backends (`goodput engine`, as vLLM answers): engines whose prefill is
// 0.05 ms a token and whose steps take 10 ms, streams running on both, and a ~5,000-token prompt.
// The gateway sends its leading pieces as requests of their own, one after another, each a prefix
// the engine's cache keeps for the next; the request itself then finds all but its last piece
// cached, and every stream is served. The replicas' pace is not measured nor the step share cut
// by late gaps: on a busy machine either rightly sends the prompt whole, and each has tests of its
// own (flow-control.test.ts, gap-at-write.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PRESETS } from '../../src/core/config/presets.ts';
import { resolvePolicy } from '../../src/core/config/policy.ts';
import {
  decisionRecord,
  engines,
  gateway,
  metricValue,
  postChat,
  runningStreams,
} from './gateway-kit.ts';

const profile = { profile: 'const:prefill_ms_per_token=0.05,decode_step_ms=10' };
const ADMIN = 'staged-http-admin';
const LONG = 'word '.repeat(5_000);
const staging = resolvePolicy({
  ...PRESETS.goodput,
  dispatch: { type: 'flow-control', params: { pace: false, gap_feedback: false } },
});

test('to HTTP backends a staged prompt goes as its pieces, each cached for the next', async () => {
  const backends = await engines(2, profile);
  const gw = await gateway(backends, staging, { engine: profile, adminToken: ADMIN });
  const streams = runningStreams(gw.url, 4, 300);
  // The streams are running on both replicas when the long prompt comes.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const served = async () =>
    (
      await Promise.all(backends.map((b) => metricValue(b.url, 'vllm:request_success_total')))
    ).reduce((a, b) => a + b, 0);
  const hits = async () =>
    (
      await Promise.all(backends.map((b) => metricValue(b.url, 'vllm:prefix_cache_hits_total')))
    ).reduce((a, b) => a + b, 0);
  const [servedBefore, hitsBefore] = [await served(), await hits()];
  const long = await postChat(gw.url, {
    messages: [{ role: 'user', content: LONG }],
    max_tokens: 20,
    stream: true,
  });
  assert.equal(long.status, 200);
  assert.match(await long.text(), /data: \[DONE\]/);
  const id = long.headers.get('x-goodput-request-id') ?? '';
  const d = await decisionRecord<{ route: { staged_piece_tokens: number | null } }>(
    gw.url,
    id,
    ADMIN,
  );
  assert.equal(d.route.staged_piece_tokens, 512);
  // ~6,260 tokens by the estimate: 12 pieces of 512 before the request, 13 requests in all.
  assert.equal((await served()) - servedBefore, 13, 'the pieces, then the request');
  const cached = (await hits()) - hitsBefore;
  assert.ok(cached >= 11 * 512 * 0.9, `each piece found the one before cached: ${cached} tokens`);
  assert.deepEqual(await streams, [200, 200, 200, 200]);
});
