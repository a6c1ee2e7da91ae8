// Runs and calls cut short, against a server that trickles its answer a token at a time: a call
// ends at its timeout however often bytes come, and a run interrupted (Ctrl-C, SIGTERM) still
// ends with its result — what was sent, the calls still running counted as interrupted — and
// exits 130.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { runBench, type BenchSpec } from '../../src/loadgen/run-bench.ts';
import { wallClock } from '../../src/runtime/wall-clock.ts';
import { wallTimers } from '../../src/runtime/wall-timers.ts';
import { spawnGoodput } from '../gateway/process-kit.ts';
import { until } from '../gateway/gateway-kit.ts';
import { tempDir } from '../temp-dir.ts';

/** A server that sends a token every 100 ms, 50 of them: each answer takes 5 s. */
let started = 0;
const streams = new Set<ServerResponse>();
const server = createServer((req, res) => {
  if (req.url === '/v1/models') return void res.end(JSON.stringify({ data: [{ id: 'm' }] }));
  started++;
  req.resume();
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  streams.add(res);
  let sent = 0;
  const tick = setInterval(() => {
    if (sent++ < 50)
      return void res.write(`data: ${JSON.stringify({ choices: [{ text: 'x' }] })}\n\n`);
    clearInterval(tick);
    res.end('data: [DONE]\n\n');
  }, 100);
  res.on('close', () => {
    clearInterval(tick);
    streams.delete(res);
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
after(() => {
  for (const s of streams) s.destroy();
  server.close();
});

test('a call that trickles past --request-timeout fails client_timeout then, not when its answer ends', async () => {
  const spec: BenchSpec = {
    baseUrl: url,
    model: 'm',
    endpoint: 'completions',
    workload: { rate: Infinity, numRequests: 2, input: 'fixed:8', output: 'fixed:50' },
    seed: 1,
    sendClass: false,
    percentiles: [99],
    timeoutMs: 600,
  };
  const run = await runBench(spec, { clock: wallClock, timers: wallTimers() });
  assert.deepEqual(run.metrics.failed_by_reason, { client_timeout: 2 });
  for (const r of run.records) {
    assert.ok(r.tokenTimesMs.length > 0, 'tokens came before the timeout');
    // The answer would have taken 5 s; the call ended at its 0.6 s timeout.
    assert.ok(r.endMs - r.sentMs < 4_000, `ended after ${r.endMs - r.sentMs} ms`);
  }
});

test('goodput bench interrupted: the result of what was sent, written, and exit 130', async () => {
  const file = join(tempDir('bench-cut'), 'result.json');
  const before = started;
  const bench = spawnGoodput([
    'bench',
    '--url',
    url,
    '--model',
    'm',
    '--rate',
    '20',
    '--num-requests',
    '1000',
    '--input',
    'fixed:8',
    '--output',
    'fixed:50',
    '--json',
    file,
  ]);
  await until(() => started - before >= 5, 2_000);
  bench.child.kill('SIGINT');
  assert.deepEqual(await bench.exited, { code: 130, signal: null }, bench.output());
  const result = JSON.parse(readFileSync(file, 'utf8')) as {
    num_prompts: number;
    completed: number;
    failed_by_reason: Record<string, number>;
  };
  assert.ok(result.num_prompts < 1000, `sent ${result.num_prompts}`);
  assert.equal(result.completed, 0, 'each answer takes 5 s');
  assert.equal(result.failed_by_reason.interrupted, result.num_prompts);
  assert.match(bench.output(), /interrupted: \d+ requests sent, \d+ of them cut short/);
  assert.match(bench.output(), /Serving Benchmark Result/);
});

test('goodput bench interrupted while the server trickles its model list: exit 130 at once, nothing sent', async () => {
  let asked = 0;
  const trickling = createServer((req, res) => {
    asked++;
    res.writeHead(200, { 'content-type': 'application/json' });
    const tick = setInterval(() => res.write(' '), 100);
    res.on('close', () => clearInterval(tick));
  });
  await new Promise<void>((r) => trickling.listen(0, '127.0.0.1', r));
  after(() => {
    trickling.closeAllConnections();
    trickling.close();
  });
  const at = `http://127.0.0.1:${(trickling.address() as { port: number }).port}`;
  const bench = spawnGoodput(['bench', '--url', at, '--num-requests', '5']);
  await until(() => asked > 0, 5_000);
  await new Promise((r) => setTimeout(r, 300));
  bench.child.kill('SIGINT');
  assert.deepEqual(await bench.exited, { code: 130, signal: null }, bench.output());
  assert.match(bench.output(), /interrupted before the server listed its models: nothing was sent/);
});
