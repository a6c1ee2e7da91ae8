// The prefix cache seen end to end: a conversation trace whose turns share their history gets
// cache hits that cut prefill (and so TTFT); turning caching off removes both.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './helpers.ts';
import { tempDir } from './temp-dir.ts';

const trace = join(tempDir('prefix'), 'chat.jsonl');
const lines: string[] = [];
// 40 conversations of 5 turns; turn k re-sends the history (k + 1) × 64 blocks of 16 tokens.
for (let turn = 0; turn < 5; turn++) {
  for (let c = 0; c < 40; c++) {
    const blocks = (turn + 1) * 64;
    const hashes = Array.from({ length: blocks }, (_, b) => `c${c}-b${b}`);
    lines.push(
      JSON.stringify({
        t_ms: turn * 20_000 + c * 100,
        input_tokens: blocks * 16,
        output_tokens: 64,
        session: `c${c}`,
        prefix_hashes: hashes,
      }),
    );
  }
}
writeFileSync(trace, `${lines.join('\n')}\n`);

test('shared conversation history hits the cache and cuts TTFT', () => {
  const cached = run({ trace, replicas: 1 });
  const uncached = run({ trace, replicas: 1, prefixCaching: false });
  assert.equal(cached.completed, 200);
  // Turns after the first find their whole history cached: ≥ 4/5 · 4/5 of prompt tokens, roughly.
  assert.ok(cached.engine.prefix_hit_rate > 0.5, `hit rate ${cached.engine.prefix_hit_rate}`);
  assert.equal(uncached.engine.prefix_hit_rate, 0);
  assert.ok(cached.latency_ms.ttft.mean < uncached.latency_ms.ttft.mean);
});

test('a prefix-cache cold reset between turns drops the history: the next turn misses it', () => {
  const warm = run({ trace, replicas: 1 });
  // Just before turns 2 and 4 arrive (at 40 s and 80 s), every cached prefix goes cold.
  const cold = run({ trace, replicas: 1, prefixResetAtS: [39, 79] });
  assert.equal(cold.completed, 200);
  const resets = cold.fleet.prefix_resets;
  assert.equal(resets?.resets, 2);
  assert.ok((resets?.dropped_blocks ?? 0) > 40 * 64, `dropped ${resets?.dropped_blocks}`);
  assert.ok(
    cold.engine.prefix_hit_rate < warm.engine.prefix_hit_rate - 0.1,
    `${cold.engine.prefix_hit_rate} against ${warm.engine.prefix_hit_rate}`,
  );
  assert.equal(warm.fleet.prefix_resets, undefined, 'no resets, no key');
});
