// Long prompts through the live gateway: engines whose prefill is 0.05 ms a token (a 5,000-token
// prompt stalls a step 250 ms, past the 54 ms a step may take beside 80 ms token gaps), streams
// running on both, and two long prompts sent one after the other, too long to share a step. Each
// is admitted on a wait for its turn — a replica whose streams can spare its stall — the second
// after the first's, and both are served; the decision log has what was predicted and waited.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decisionRecord, engines, gateway, postChat, runningStreams } from './gateway-kit.ts';

const profile = { profile: 'const:prefill_ms_per_token=0.05,decode_step_ms=2' };
const ADMIN = 'long-turns-admin';
/** About 5,000 tokens of prompt: two are more than a step's 8,192. */
const LONG = 'word '.repeat(5_000);

interface Record {
  readonly admission: { readonly result: string; readonly predicted_wait_ms: number | null };
  readonly waited_ms: number | null;
}

const decision = (url: string, id: string) => decisionRecord<Record>(url, id, ADMIN);

test('long prompts behind young streams wait their turns, in order, and are served', async () => {
  const backends = await engines(2, profile);
  const gw = await gateway(backends, 'goodput', { engine: profile, adminToken: ADMIN });
  // Streams on both replicas, young: nothing is known of their lengths, so each must reach its
  // ~103rd token before a long prompt's stall can go beside it.
  const streams = runningStreams(gw.url, 4, 300);
  await new Promise((resolve) => setTimeout(resolve, 50));
  const long = () =>
    postChat(gw.url, {
      messages: [{ role: 'user', content: LONG }],
      max_tokens: 20,
      stream: true,
    });
  const first = long();
  const second = long();
  const answers = await Promise.all([first, second]);
  const ids = answers.map((r) => r.headers.get('x-goodput-request-id') ?? '');
  for (const r of answers) {
    assert.equal(r.status, 200);
    assert.match(await r.text(), /data: \[DONE\]/);
  }
  assert.deepEqual(await streams, [200, 200, 200, 200]);
  const [a, b] = await Promise.all(ids.map((id) => decision(gw.url, id)));
  for (const d of [a, b]) {
    assert.equal(d.admission.result, 'admit');
    assert.ok((d.admission.predicted_wait_ms ?? 0) > 0, 'a wait for its turn is predicted');
    assert.ok((d.waited_ms ?? 0) > 0, 'and it waited');
  }
  assert.ok(
    (b.admission.predicted_wait_ms ?? 0) > (a.admission.predicted_wait_ms ?? 0),
    `the second's turn after the first's: ${b.admission.predicted_wait_ms} ms, ${a.admission.predicted_wait_ms} ms`,
  );
});
