// A gateway's decision log is a trace: `goodput serve --decisions FILE`, then
// `goodput simulate --trace FILE` offers the simulated fleet what the gateway was offered — each
// request at its arrival, its prompt's size, its tenant, class, output limit and deadline, its
// reply as the gateway served it, or, refused, the reply of a request like it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadTrace } from '../../src/sim/workload/trace/load-trace.ts';
import { postChat } from './gateway-kit.ts';
import { runGoodput, startEngine, startServe } from './process-kit.ts';
import { tempDir } from '../temp-dir.ts';

test('a decision log written by goodput serve replays in the simulator', async () => {
  const dir = tempDir('replay-live');
  const log = join(dir, 'decisions.jsonl');
  const gw = await startServe(['--decisions', log, '--profile', 'const:step_ms=2']);
  const served: { id: string; completion: number }[] = [];
  for (const [maxTokens, deadline] of [
    [8, undefined],
    [12, '30000'],
    [5, undefined],
  ] as const) {
    // The third belongs to a conversation: its session replays with it.
    const res = await postChat(
      gw.url,
      { max_tokens: maxTokens },
      deadline === undefined
        ? maxTokens === 5
          ? { 'x-session-id': 'chat-7' }
          : {}
        : { 'x-goodput-timeout-ms': deadline },
    );
    assert.equal(res.status, 200);
    const body = (await res.json()) as { usage: { completion_tokens: number } };
    served.push({
      id: res.headers.get('x-goodput-request-id') ?? '',
      completion: body.usage.completion_tokens,
    });
  }
  // Refused: no context holds it. Its reply is borrowed.
  const refused = await postChat(gw.url, { max_tokens: 1_000_000 });
  assert.equal(refused.status, 400);
  await refused.text();
  gw.proc.child.kill('SIGTERM');
  assert.equal((await gw.proc.exited).code, 0, gw.proc.output());

  const records = readFileSync(log, 'utf8')
    .trimEnd()
    .split('\n')
    .map(
      (l) => JSON.parse(l) as { msg: string; request_id: string; asked?: { input_tokens: number } },
    );
  const inputs = records.filter((r) => r.msg === 'decision').map((r) => r.asked?.input_tokens);
  const t = loadTrace(log);
  assert.equal(t.format, 'decisions');
  assert.equal(t.rows, 4);
  assert.deepEqual([...t.inputTokens], inputs);
  const replies = served.map((s) => s.completion);
  assert.deepEqual([...t.outputTokens].slice(0, 3), replies);
  assert.equal(t.outputTokens[3], replies[0], 'the refused request takes the first reply, in turn');
  assert.deepEqual(
    t.extras?.map((e) => e?.maxTokens),
    [8, 12, 5, 1_000_000],
  );
  assert.deepEqual(
    t.extras?.map((e) => e?.session),
    [undefined, undefined, 'chat-7', undefined],
  );
  // The deadline counts from the headers, the arrival from the body read after them.
  const timeouts = t.extras?.map((e) => e?.timeoutMs);
  assert.deepEqual(
    [timeouts?.[0], timeouts?.[2], timeouts?.[3]],
    [undefined, undefined, undefined],
  );
  assert.ok(Math.abs((timeouts?.[1] ?? 0) - 30_000) < 100, String(timeouts?.[1]));

  const out = join(dir, 'replayed.json');
  const sim = await runGoodput(['simulate', '--policy', 'goodput', '--trace', log, '--out', out]);
  assert.equal(sim.code, 0, sim.out);
  const report = JSON.parse(readFileSync(out, 'utf8')) as {
    offered: { requests: number };
    admission: { reject_reasons: Record<string, number> };
  };
  assert.equal(report.offered.requests, 4);
  assert.deepEqual(report.admission.reject_reasons, { context_length: 1 });

  // And live, against another server: the same four requests, the one no context holds refused.
  const engine = await startEngine(['--seed', '1']);
  const live = await runGoodput(['bench', '--url', engine, '--trace', log, '--endpoint', 'chat']);
  assert.equal(live.code, 0, live.out);
  assert.match(live.out, /Successful requests:\s+3\n/);
  assert.match(live.out, /Failed requests:\s+1\n/);
});
