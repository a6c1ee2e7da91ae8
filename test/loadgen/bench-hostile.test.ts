// `goodput bench` against a server that answers what no server of the API sends: an event that
// is JSON but not an object, a choice that is null, an event past the reader's limit, token
// counts that are text, a model list cut mid-way or trickled. Each call ends as its record
// (`bad_stream`), the run goes on and reports, counts stay numbers; model discovery fails by
// `--url` or stops when the run is interrupted. And the page of a run that asked for other
// percentiles than vLLM's default shows them.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, test } from 'node:test';
import { BenchInterrupted, runBench, type BenchSpec } from '../../src/loadgen/run-bench.ts';
import { sessionHeader } from '../../src/loadgen/bench-call.ts';
import { benchReportDoc } from '../../src/report/bench-report.ts';
import { wallClock } from '../../src/runtime/wall-clock.ts';
import { wallTimers } from '../../src/runtime/wall-timers.ts';

const spec = (baseUrl: string, over: Partial<BenchSpec> = {}): BenchSpec => ({
  baseUrl,
  model: 'm',
  endpoint: 'completions',
  workload: { rate: Infinity, numRequests: 6, input: 'fixed:10', output: 'fixed:2' },
  seed: 1,
  sendClass: false,
  percentiles: [99],
  timeoutMs: 30_000,
  maxConcurrency: 1,
  ...over,
});
const hooks = { clock: wallClock, timers: wallTimers() };

const servers: Server[] = [];
after(() => servers.forEach((s) => s.close()));
async function listening(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

const token = `data: ${JSON.stringify({ choices: [{ index: 0, text: 'a' }] })}\n\n`;
const DONE = 'data: [DONE]\n\n';
/**
 * Each call's answer in turn: an event that is JSON but no object, a chunk whose choice is null
 * (a chunk without a token), an event past the reader's limit, then three whose counts are text.
 */
const BODIES = [
  `${token}data: null\n\n${DONE}`,
  `${token}data: ${JSON.stringify({ choices: [null] })}\n\n${DONE}`,
  `${token}data: ${'x'.repeat(17 * 1024 * 1024)}\n\n${DONE}`,
  ...Array.from(
    { length: 3 },
    () =>
      `${token}${token}data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: '10', completion_tokens: '5' } })}\n\n${DONE}`,
  ),
];

test('streams no server of the API sends end as bad_stream records; the run goes on, its counts numbers', async () => {
  let n = 0;
  const url = await listening(
    createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(BODIES[n++]);
    }),
  );
  const run = await runBench(spec(url), hooks);
  assert.deepEqual(run.metrics.failed_by_reason, { bad_stream: 2 });
  assert.equal(run.metrics.completed, 4);
  // Counts that are text are no counts: the tokens counted in the streams stand (1 + 3 × 2).
  assert.equal(run.metrics.total_output_tokens, 7);
  assert.equal(typeof run.metrics.total_input_tokens, 'number');
});

test('model discovery: a list cut mid-way is refused by --url; an interrupted run stops waiting for it', async () => {
  const cut = await listening(
    createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"data":[{"id"', () => res.destroy());
    }),
  );
  await assert.rejects(
    runBench(spec(cut, { model: undefined }), hooks),
    /--url: .*cut before its end/,
  );
  const trickled = await listening(
    createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const tick = setInterval(() => res.write(' '), 100);
      res.on('close', () => clearInterval(tick));
    }),
  );
  const stop = new AbortController();
  setTimeout(() => stop.abort(), 300);
  await assert.rejects(
    runBench(spec(trickled, { model: undefined }), { ...hooks, stop: stop.signal }),
    (e) => e instanceof BenchInterrupted,
  );
});

test('a session no header can carry as it is goes percent-encoded, the same text the same id', () => {
  assert.equal(sessionHeader('chat-42'), 'chat-42');
  assert.equal(sessionHeader('snow☃'), 'snow%E2%98%83');
  assert.equal(sessionHeader('a\nb'), 'a%0Ab');
});

test("the bench page's headline shows the tail the run asked for (--metric-percentiles 50,90): p90, not a dash for p99", async () => {
  const url = await listening(
    createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${token}${token}${DONE}`);
    }),
  );
  const asked = spec(url, { percentiles: [50, 90] });
  const doc = benchReportDoc(asked, await runBench(asked, hooks), 'goodput bench');
  const { columns, rows } = doc.headline;
  const row = Object.fromEntries(columns.map((c, i) => [c, rows[0][i]]));
  assert.match(row['TTFT median / p90 ms'], /^\d+\.\d \/ \d+\.\d$/);
  assert.match(row['E2EL median / p90 ms'], /^\d+\.\d \/ \d+\.\d$/);
});
