// `goodput serve --decisions FILE` as an operator runs it: a process on the embedded fleet. Every
// decision is appended to the file as one JSON line: the record that `/admin/decisions/:id`
// returns, in pino's envelope; and when a dispatched request ends, its outcome record, which the
// lookup adds to the decision. SIGTERM closes the log, and the process exits 0.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { postChat, until } from './gateway-kit.ts';
import { tempDir } from '../temp-dir.ts';

const ADMIN = 'admin-secret';
const dir = tempDir('decisions');
const file = join(dir, 'decisions.jsonl');
const child = spawn(
  process.execPath,
  [
    'bin/goodput.js',
    'serve',
    '--port',
    '0',
    '--decisions',
    file,
    '--admin-token',
    ADMIN,
    '--profile',
    'const:step_ms=2',
  ],
  { stdio: ['ignore', 'pipe', 'pipe'] },
);
let output = '';
child.stdout.on('data', (d) => (output += String(d)));
child.stderr.on('data', (d) => (output += String(d)));
const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
after(() => {
  if (child.exitCode === null) child.kill('SIGKILL');
});

test('every decision is appended as a JSON line: the admin record in its envelope', async () => {
  await until(() => /OpenAI API at (\S+)\/v1/.test(output) || child.exitCode !== null, 4_000);
  const url = /OpenAI API at (\S+)\/v1/.exec(output)?.[1];
  assert.ok(url, `the gateway did not start:\n${output}`);
  // What a cold start reserves is said once, at start: the reason for kv_capacity refusals then.
  assert.match(output, /"prior_output_reserve":4096,"min_samples":20/);

  const ids: string[] = [];
  for (const stream of [false, true]) {
    const res = await postChat(url, { max_tokens: 4, stream });
    assert.equal(res.status, 200, await res.clone().text());
    await res.text();
    ids.push(res.headers.get('x-goodput-request-id') ?? '');
  }
  const fromAdmin = await Promise.all(
    ids.map(async (id) => {
      const res = await fetch(`${url}/admin/decisions/${id}`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      assert.equal(res.status, 200);
      return (await res.json()) as Record<string, unknown>;
    }),
  );

  child.kill('SIGTERM');
  assert.equal(await exited, 0, output);
  const lines = readFileSync(file, 'utf8')
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.deepEqual(
    lines.map((l) => [l.msg, l.request_id]),
    ids.flatMap((id) => [
      ['decision', id],
      ['outcome', id],
    ]),
    'a decision when each was dispatched, an outcome when it ended',
  );
  for (const [i, line] of lines.entries()) {
    const { level, time, pid, hostname, msg, ...record } = line;
    assert.equal(level, 30);
    assert.equal(pid, child.pid);
    assert.equal(typeof hostname, 'string');
    assert.ok(typeof time === 'number' && Math.abs(time - Date.now()) < 60_000, `time ${time}`);
    const { outcome, ...decision } = fromAdmin[Math.floor(i / 2)];
    if (msg === 'decision') {
      assert.deepEqual(record, decision);
      continue;
    }
    // The lookup gives the decision with how it ended; the log, the outcome record.
    const { at_ms, outcome: ended } = record as { at_ms: number; outcome: Record<string, unknown> };
    assert.deepEqual(outcome, { at_ms, ...ended });
    assert.deepEqual(Object.keys(record), ['request_id', 'tenant', 'class', 'at_ms', 'outcome']);
    assert.equal(ended.state, 'completed');
    assert.equal(ended.output_tokens, 4);
    assert.equal(ended.good, true);
    assert.equal(ended.missed, null);
    assert.equal(
      ended.predicted_ttft_ms,
      (decision.admission as Record<string, unknown>).predicted_ttft_ms,
    );
    assert.ok(typeof ended.ttft_ms === 'number' && ended.ttft_ms > 0, `ttft ${ended.ttft_ms}`);
    assert.ok(typeof ended.e2e_ms === 'number' && ended.e2e_ms >= ended.ttft_ms);
    assert.ok(typeof ended.itl_p99_ms === 'number', 'four tokens: three gaps');
  }
});
