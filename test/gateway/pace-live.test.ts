// Flow control's pace through real HTTP: a `goodput engine` that steps 4× the timing profile the
// gateway plans with (`--slowdown 4`) is measured at about that multiple and exported on
// /metrics, and the streams it served are whole. An engine's step never ends early, so however
// slow the machine the measure can only be higher: the bound below is one-sided.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { engines, gateway, metricValue, postChat } from './gateway-kit.ts';

test('a backend stepping 4× its profile is measured at 3× or more, and /metrics says so', async () => {
  const [slow] = await engines(1, { slowdown: 4 });
  const gw = await gateway([slow]);
  assert.equal(await metricValue(gw.url, 'goodput_backend_pace_ratio'), 1, 'before any stream');
  const bodies = await Promise.all(
    Array.from({ length: 6 }, async () => {
      const res = await postChat(gw.url, { max_tokens: 150, ignore_eos: true, stream: true });
      assert.equal(res.status, 200);
      return res.text();
    }),
  );
  for (const b of bodies) {
    assert.match(b, /data: \[DONE\]/);
    assert.doesNotMatch(b, /"error"/);
  }
  const pace = await metricValue(gw.url, 'goodput_backend_pace_ratio');
  assert.ok(pace >= 3, `measured pace ${pace}`);
});
