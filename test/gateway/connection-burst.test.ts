// A burst of clients connecting at once to a real `goodput serve` on its embedded fleet, each on
// a connection of its own: the listener takes them paused and lets them in at its loop's pace
// (src/gateway/http/connection-intake.ts). Every client gets an answer with a request id —
// a stream that ends with [DONE], or a refusal — the decision log records each of them, the
// offered count is the burst, and once it is over no connection is left waiting to be read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { metricValue } from './gateway-kit.ts';
import { startServe, until } from './process-kit.ts';

const BURST = 600;
const dir = mkdtempSync(join(tmpdir(), 'goodput-burst-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const decisions = join(dir, 'decisions.jsonl');
const gw = await startServe(['--decisions', decisions]);
after(async () => {
  gw.proc.child.kill('SIGTERM');
  await gw.proc.exited;
});

interface Answer {
  readonly status: number;
  readonly id: string | undefined;
  readonly body: string;
}

/** A short streaming chat completion on a connection of its own. */
function ask(url: string): Promise<Answer> {
  const body = JSON.stringify({
    model: 'llama-3-8b',
    messages: [{ role: 'user', content: 'Why did the nightly backup fail?' }],
    max_tokens: 4,
    stream: true,
  });
  return new Promise((ok, fail) => {
    const req = request(
      `${url}/v1/chat/completions`,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.once('end', () => {
          const id = res.headers['x-goodput-request-id'];
          ok({
            status: res.statusCode ?? 0,
            id: typeof id === 'string' ? id : undefined,
            body: text,
          });
        });
      },
    );
    req.once('error', fail);
    req.end(body);
  });
}

test('a burst of new connections: every client answered, recorded and counted', async () => {
  const answers = await Promise.all(Array.from({ length: BURST }, () => ask(gw.url)));
  for (const a of answers) {
    assert.ok(a.id, `an answer without a request id: ${a.status} ${a.body.slice(0, 200)}`);
    if (a.status === 200) assert.ok(a.body.trimEnd().endsWith('data: [DONE]'), a.body.slice(-200));
    else assert.ok([429, 503].includes(a.status), `${a.status} ${a.body.slice(0, 200)}`);
  }
  const ids = new Set(answers.map((a) => a.id));
  assert.equal(ids.size, BURST, 'one id per request');
  assert.equal(await metricValue(gw.url, 'goodput_offered_requests_total'), BURST);
  // Every request is findable in the decision log by its id.
  await until('every request in the decision log', () => {
    const logged = new Set(
      readFileSync(decisions, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => (JSON.parse(l) as { request_id: string }).request_id),
    );
    return [...ids].every((id) => logged.has(id as string));
  });
  assert.equal(await metricValue(gw.url, 'goodput_connections_waiting'), 0);
});
