// Agent tool calls: a request pauses mid-generation while its tool runs, then the tool's result
// is prefilled and generation goes on. Its KV is kept (held, nothing to redo), swapped (moved to
// host and back) or dropped (prefilled again); `auto` keeps it while tool calls return quickly
// and gives it up when they take long. The pause is the tool's time, not a token gap.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './helpers.ts';
import type { ScenarioSpec } from '../src/sim/scenario.ts';
import { tempDir } from './temp-dir.ts';

const agents = (toolCalls: string, extra: Partial<ScenarioSpec> = {}) =>
  run({
    rate: 20,
    numRequests: 600,
    input: 'sharegpt-vllm',
    output: 'sharegpt-vllm',
    toolCalls,
    ...extra,
  });

test('keep, swap and drop do what they say, and cost what they should', () => {
  const keep = agents('2:1500:300', { toolKv: 'keep' });
  const swap = agents('2:1500:300', { toolKv: 'swap' });
  const drop = agents('2:1500:300', { toolKv: 'drop' });
  const pauses = (r: typeof keep) => r.preemption.tool_pauses;
  assert.ok(pauses(keep).keep > 1_000);
  assert.equal(pauses(keep).swap + pauses(keep).drop, 0);
  assert.ok(
    pauses(swap).swap > pauses(swap).drop,
    'swap, dropping only when the host pool is full',
  );
  assert.ok(swap.preemption.swapped_bytes > 0);
  assert.equal(pauses(drop).drop, pauses(keep).keep);
  for (const r of [keep, swap, drop]) assert.equal(r.completed, 600);
  // Prefilling every context again after each tool call is the dearest.
  assert.ok(drop.latency_ms.e2el.mean > swap.latency_ms.e2el.mean);
  assert.ok(swap.latency_ms.e2el.mean > keep.latency_ms.e2el.mean);
  // Paused about as long as the tools take (mean 1.5 s).
  assert.ok(Math.abs(pauses(keep).paused_ms_mean - 1_500) < 300, `${pauses(keep).paused_ms_mean}`);
});

test('auto keeps KV for quick tools and gives it up for slow ones', () => {
  const quick = agents('2:500:300').preemption.tool_pauses;
  const slow = agents('2:10000:300').preemption.tool_pauses;
  assert.ok(quick.keep > 0.9 * (quick.keep + quick.swap + quick.drop), JSON.stringify(quick));
  assert.ok(slow.keep < 0.2 * (slow.keep + slow.swap + slow.drop), JSON.stringify(slow));
});

test("a tool call's pause is not a token gap: kept KV leaves the streams' gaps as they were", () => {
  const plain = run({
    rate: 20,
    numRequests: 600,
    input: 'sharegpt-vllm',
    output: 'sharegpt-vllm',
  });
  const tools = agents('2:1500:300', { toolKv: 'keep' });
  assert.ok(tools.latency_ms.itl.max < 1_000, `largest gap ${tools.latency_ms.itl.max} ms`);
  assert.ok(tools.latency_ms.itl.p99 < 2 * plain.latency_ms.itl.p99);
});

test('native traces carry tool_calls per row; a bad one is refused naming line and field', () => {
  const dir = tempDir('tools');
  const ok = join(dir, 'ok.jsonl');
  writeFileSync(
    ok,
    [
      { t_ms: 0, input_tokens: 500, output_tokens: 200, tool_calls: [[50, 2000, 400]] },
      { t_ms: 10, input_tokens: 300, output_tokens: 100 },
    ]
      .map((r) => JSON.stringify(r))
      .join('\n') + '\n',
  );
  const r = run({ trace: ok });
  assert.equal(r.completed, 2);
  assert.equal(
    r.preemption.tool_pauses.keep + r.preemption.tool_pauses.swap + r.preemption.tool_pauses.drop,
    1,
  );
  assert.ok(r.latency_ms.e2el.max > 2_000, 'the request waited for its tool');
  const bad = join(dir, 'bad.jsonl');
  writeFileSync(
    bad,
    JSON.stringify({ t_ms: 0, input_tokens: 5, output_tokens: 5, tool_calls: [[3, 100]] }) + '\n',
  );
  assert.throws(() => run({ trace: bad }), /bad\.jsonl:1: tool_calls\[0\]: expected an array/);
  assert.throws(() => run({ toolCalls: '2:fast:10' }), /--tool-calls/);
  assert.throws(() => run({ trace: ok, toolCalls: '1:100:10' }), /--tool-calls/);
});
