// `goodput bench` against real servers: a `goodput engine` process, a server that fails in
// every way a server can, a port where nothing listens. Every request ends as a record with a
// status and a reason; nothing throws; the CLI writes vLLM's fields and exits 0, and bad flags
// exit 2 naming the flag.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { runBench, type BenchSpec } from '../../src/loadgen/run-bench.ts';
import { wallClock } from '../../src/runtime/wall-clock.ts';
import { wallTimers } from '../../src/runtime/wall-timers.ts';
import { metricValue } from '../gateway/gateway-kit.ts';
import { runGoodput, startEngine, startServe } from '../gateway/process-kit.ts';
import { freePort } from '../gateway/redis-kit.ts';
import { tempDir } from '../temp-dir.ts';

// Started at the top level: the kit ends it when the file's tests end.
const engine = await startEngine(['--seed', '3']);

const spec = (baseUrl: string, over: Partial<BenchSpec> = {}): BenchSpec => ({
  baseUrl,
  endpoint: 'completions',
  workload: { rate: Infinity, numRequests: 8, input: 'fixed:40', output: 'fixed:6' },
  seed: 1,
  sendClass: false,
  percentiles: [99],
  timeoutMs: 30_000,
  ...over,
});
const hooks = { clock: wallClock, timers: wallTimers() };

test('bench against goodput engine: exact lengths, every request completed and timed', async () => {
  const run = await runBench(spec(engine, { slo: { ttftMs: 60_000 } }), hooks);
  assert.equal(run.model, 'llama-3-8b');
  assert.equal(run.metrics.completed, 8);
  assert.equal(run.metrics.total_input_tokens, 8 * 40);
  assert.equal(run.metrics.total_output_tokens, 8 * 6);
  assert.equal(run.metrics.request_goodput, run.metrics.request_throughput);
  for (const r of run.records) assert.equal(r.tokenTimesMs.length, 6);
  assert.ok((run.metrics.median_tpot_ms as number) > 0);
});

test('bench --n against goodput engine: every choice of every request timed, usage over all', async () => {
  for (const endpoint of ['completions', 'chat'] as const) {
    const workload = { ...spec(engine).workload, choices: 3 };
    const run = await runBench(spec(engine, { endpoint, workload }), hooks);
    assert.equal(run.metrics.completed, 8);
    assert.equal(run.metrics.total_output_tokens, 8 * 3 * 6, endpoint);
    for (const r of run.records) {
      assert.deepEqual(
        [0, 1, 2].map((c) => r.tokenChoices?.filter((x) => x === c).length),
        [6, 6, 6],
      );
    }
  }
});

test('bench on the chat endpoint: filler prompts of about the asked length', async () => {
  const run = await runBench(spec(engine, { endpoint: 'chat' }), hooks);
  assert.equal(run.metrics.completed, 8);
  const mean = (run.metrics.total_input_tokens as number) / 8;
  assert.ok(mean > 20 && mean < 80, `about 40 prompt tokens each, got ${mean}`);
});

test('bench on the Responses API through goodput serve: every token timed, the usage from its end, nothing kept unless asked', async () => {
  const serve = await startServe(['--profile', 'const:step_ms=2']);
  const run = await runBench(spec(serve.url, { endpoint: 'responses' }), hooks);
  assert.equal(run.metrics.completed, 8);
  assert.equal(run.metrics.total_output_tokens, 8 * 6);
  for (const r of run.records) assert.equal(r.tokenTimesMs.length, 6);
  const mean = (run.metrics.total_input_tokens as number) / 8;
  assert.ok(mean > 20 && mean < 80, `about 40 prompt tokens each, got ${mean}`);
  const saved = () => metricValue(serve.url, 'goodput_kept_responses_total', { op: 'save' });
  assert.equal(await saved(), 0, 'a run keeps no responses');
  await runBench(spec(serve.url, { endpoint: 'responses', keepResponses: true }), hooks);
  assert.equal(await saved(), 8, 'unless asked to');
});

/** `server` listening on a free port, closed when the file's tests end: its URL. */
async function listening(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  after(() => server.close());
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** `n` Responses calls, one at a time, to a scripted server. */
const responsesRun = (url: string, n: number) =>
  runBench(
    spec(url, {
      model: 'm',
      endpoint: 'responses',
      maxConcurrency: 1,
      workload: { rate: Infinity, numRequests: n, input: 'fixed:4', output: 'fixed:3' },
    }),
    hooks,
  );

test("a Responses call's pieces are its tokens: one named with its first arguments is one", async () => {
  const event = (e: object) => `event: x\ndata: ${JSON.stringify(e)}\n\n`;
  const args = (delta: string) =>
    event({ type: 'response.function_call_arguments.delta', item_id: 'fc_1', delta });
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    // The first piece names the call and opens its arguments; two more follow, each on its own.
    res.write(
      event({ type: 'response.output_item.added', item: { type: 'function_call', id: 'fc_1' } }) +
        args('{"a'),
    );
    setTimeout(() => res.write(args('": ')), 20);
    setTimeout(() => res.write(args('1}')), 40);
    setTimeout(
      () =>
        res.end(
          event({
            type: 'response.completed',
            response: { usage: { input_tokens: 4, output_tokens: 3 } },
          }),
        ),
      60,
    );
  });
  const url = await listening(server);
  const run = await responsesRun(url, 1);
  assert.equal(run.metrics.completed, 1);
  assert.equal(run.records[0].tokenTimesMs.length, 3);
});

test('a Responses stream that fails, or ends before its end, is a failed record saying why', async () => {
  const events = (types: readonly object[]) =>
    types.map((e) => `event: x\ndata: ${JSON.stringify(e)}\n\n`).join('');
  const delta = { type: 'response.output_text.delta', delta: 'a' };
  const bodies = [
    events([
      delta,
      { type: 'response.failed', response: { error: { code: 'upstream_error', message: 'cut' } } },
    ]),
    events([delta]),
    events([delta, { type: 'error', code: 'server_error', message: 'oops' }]),
  ];
  let n = 0;
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(bodies[n++ % bodies.length]);
  });
  const url = await listening(server);
  const run = await responsesRun(url, 3);
  assert.deepEqual(run.metrics.failed_by_reason, {
    upstream_error: 1,
    stream_cut: 1,
    server_error: 1,
  });
});

/** Answers in turn: a refusal, a stream cut mid-way, an error event, a good stream. */
async function faultyServer(): Promise<{ url: string; server: Server }> {
  let n = 0;
  const server = createServer((req, res) => {
    req.resume();
    const mode = n++ % 4;
    if (mode === 0) {
      res.writeHead(429, {
        'content-type': 'application/json',
        'x-goodput-reason': 'rate_limited',
        'retry-after': '2',
      });
      res.end(
        JSON.stringify({
          error: { message: 'slow down', type: 'rate_limit_error', code: 'rate_limited' },
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (text: string) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, text }] })}\n\n`;
    // The cut comes once the first token is on the wire: a reset before it is a transport error.
    if (mode === 1) return void res.write(chunk('a'), () => setTimeout(() => res.destroy(), 20));
    res.write(chunk('a'));
    if (mode === 2)
      return void res.end(
        `data: ${JSON.stringify({ error: { message: 'engine died', code: 'upstream_error' } })}\n\n`,
      );
    res.write(chunk('b'));
    res.end(
      `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 40, completion_tokens: 2 } })}\n\ndata: [DONE]\n\n`,
    );
  });
  return { url: await listening(server), server };
}

test('bench against a failing server: each failure counted by its reason, the rest timed', async () => {
  const { url } = await faultyServer();
  const run = await runBench(spec(url, { model: 'm', maxConcurrency: 1 }), hooks);
  assert.equal(run.metrics.completed, 2);
  assert.equal(run.metrics.failed, 6);
  assert.deepEqual(run.metrics.failed_by_reason, {
    rate_limited: 2,
    stream_cut: 2,
    upstream_error: 2,
  });
  assert.deepEqual(run.metrics.failed_by_status, { '200': 4, '429': 2 });
  assert.equal(run.metrics.total_output_tokens, 4);
});

test('bench against a port where nothing listens: every request a refused connection', async () => {
  const url = `http://127.0.0.1:${await freePort()}`;
  const run = await runBench(spec(url, { model: 'm' }), hooks);
  assert.equal(run.metrics.completed, 0);
  assert.deepEqual(run.metrics.failed_by_reason, { ECONNREFUSED: 8 });
  await assert.rejects(
    runBench(spec(url), hooks),
    /--url: expected a server that lists its models/,
  );
});

test('goodput bench CLI: a vLLM-shaped JSON result, per-request lists on request', async () => {
  const file = join(tempDir('bench'), 'result.json');
  const r = await runGoodput([
    'bench',
    '--url',
    `${engine}/v1`,
    '--rate',
    '50',
    '--num-requests',
    '12',
    '--input',
    'fixed:30',
    '--output',
    'fixed:4',
    '--goodput',
    'ttft:60000,tpot:60000',
    '--metric-percentiles',
    '50,99',
    '--json',
    file,
    '--save-detailed',
  ]);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /Serving Benchmark Result[\s\S]*Successful requests:\s+12/);
  const json = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  for (const key of [
    'date',
    'model_id',
    'num_prompts',
    'request_rate',
    'burstiness',
    'duration',
    'completed',
    'failed',
    'request_throughput',
    'request_goodput',
    'output_throughput',
    'total_token_throughput',
    'mean_ttft_ms',
    'median_ttft_ms',
    'p99_ttft_ms',
    'p50_tpot_ms',
    'median_itl_ms',
    'p99_e2el_ms',
    'input_lens',
    'output_lens',
    'ttfts',
    'itls',
    'errors',
  ])
    assert.ok(key in json, key);
  assert.equal(json.completed, 12);
  assert.equal(json.request_rate, 50);
  assert.deepEqual(json.input_lens, new Array(12).fill(30));
  assert.deepEqual(json.output_lens, new Array(12).fill(4));
  assert.ok((json.itls as number[][]).every((gaps) => gaps.length === 3));
});

/** A native trace of one row asking 3 choices. */
function groupsTrace(): string {
  const file = join(tempDir('bench'), 'groups.jsonl');
  writeFileSync(file, `${JSON.stringify({ t_ms: 0, input_tokens: 9, output_tokens: 3, n: 3 })}\n`);
  return file;
}

test('goodput bench CLI: bad flags exit 2 naming the flag and value', async () => {
  const cases: [string[], RegExp][] = [
    [['--url', 'ftp://x'], /--url: expected an http\(s\) URL/],
    [['--url', engine, '--goodput', 'ttft:soon'], /--goodput: expected .*"ttft:soon"/],
    [['--url', engine, '--tenant-key', 'acme'], /--tenant-key: expected TENANT=KEY/],
    // A key no header can carry; the key itself is not repeated.
    [
      ['--url', engine, '--api-key', 'sk-☃'],
      /--api-key: expected a key of printable ASCII without spaces, got "U\+2603 at character 4"/,
    ],
    [['--url', engine, '--tenant-key', 'acme=sk one'], /--tenant-key: .*"U\+0020 at character 3"/],
    [['--url', engine, '--metric-percentiles', '0,99'], /--metric-percentiles: expected/],
    [['--url', engine, '--max-concurrency', '0'], /--max-concurrency: expected an integer ≥ 1/],
    [['--url', engine, '--n', '129'], /--n: expected an integer from 1 to 128, got "?129/],
    [
      ['--url', engine, '--n', '2', '--endpoint', 'responses'],
      /--n: expected 1 with --endpoint responses \(the Responses API has no n\), got 2/,
    ],
    [
      ['--url', engine, '--trace', groupsTrace(), '--endpoint', 'responses'],
      /--endpoint: expected completions or chat for a trace whose rows ask n up to 3/,
    ],
  ];
  for (const [args, message] of cases) {
    const count = args.includes('--trace') ? [] : ['--num-requests', '1'];
    const r = await runGoodput(['bench', ...count, ...args]);
    assert.equal(r.code, 2, r.out);
    assert.match(r.out, message);
    assert.doesNotMatch(r.out, /\n\s+at /, 'no stack trace');
  }
});

test('bench --trace: rows sent on their timestamps, with their lengths, sessions and classes', async () => {
  const seen: {
    atMs: number;
    body: { prompt: number[]; max_tokens: number };
    headers: Record<string, unknown>;
  }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += String(d)));
    req.on('end', () => {
      seen.push({ atMs: wallClock.now(), body: JSON.parse(body), headers: req.headers });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(
        `data: ${JSON.stringify({ choices: [{ index: 0, text: 'x' }] })}\n\ndata: [DONE]\n\n`,
      );
    });
  });
  const url = await listening(server);
  const run = await runBench(
    spec(url, {
      model: 'm',
      sendClass: true,
      workload: { trace: 'test/fixtures/traces/native.jsonl' },
    }),
    hooks,
  );
  assert.equal(run.metrics.completed, 4);
  const byLength = new Map(seen.map((s) => [s.body.prompt.length, s]));
  assert.deepEqual(
    [...byLength.keys()].sort((a, b) => a - b),
    [48, 64, 100, 2000],
  );
  assert.equal(byLength.get(64)?.body.max_tokens, 512, "the row's own max_tokens");
  assert.equal(byLength.get(48)?.headers['x-goodput-class'], 'batch');
  assert.equal(byLength.get(2000)?.headers['x-goodput-class'], 'reasoning');
  assert.equal(byLength.get(48)?.headers['x-session-id'], 's1');
  // Never early: each row leaves at or after its timestamp from the run's start.
  for (const r of run.records) assert.ok(r.sentMs >= r.dueMs, `${r.id} sent before it was due`);
  const due = run.records.map((r) => Math.round((r.dueMs - run.startMs) * 10) / 10);
  assert.deepEqual(
    due.sort((a, b) => a - b),
    [0, 250, 250, 1000.5],
  );
});
