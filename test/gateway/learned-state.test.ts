// What a gateway learned outlives it (`--learned-state`): real `goodput serve` processes on the
// embedded fleet, SIGTERM between them. A cold start reserves KV for 4,096 tokens of output per
// request until a class's lengths are learned; a restart from the saved state predicts and
// reserves from what the last process learned, at once. In a file, or in Redis where every
// replica writes it and a new one reads it. A state that cannot be read starts cold, saying why;
// a file in no directory is refused at start.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { percentileSorted } from '../../src/core/stats/percentile.ts';
import { requireRedisServer, startRedis } from './redis-kit.ts';
import { runGoodput, startServe, until, type GoodputProcess } from './process-kit.ts';

const MODEL = 'llama-3-8b';
const ADMIN = 'admin-learned';
/** Fast steps: the Sarathi-length replies the embedded engines give end within a second. */
const PROFILE = 'const:step_ms=1';
const MIN_SAMPLES = 5;

const dir = mkdtempSync(join(tmpdir(), 'goodput-learned-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const policyFile = join(dir, 'policy.json');
writeFileSync(
  policyFile,
  JSON.stringify({
    name: 'learned',
    policy_revision: 'learned@1',
    admission: { type: 'goodput' },
    dispatch: { type: 'flow-control' },
    routing: { type: 'least-request' },
    estimate: { min_samples: MIN_SAMPLES },
  }),
);

interface Demand {
  readonly input_tokens: number;
  readonly output_p90: number;
  readonly output_source: string;
  readonly kv_reserved_tokens: number;
}

function serve(...args: string[]) {
  return startServe([
    '--policy',
    policyFile,
    '--profile',
    PROFILE,
    '--admin-token',
    ADMIN,
    '--drain-timeout',
    '5',
    ...args,
  ]);
}

/** Sends one chat request without max_tokens; resolves with what its decision reserved. */
async function ask(url: string): Promise<Demand> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hello there' }] }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  await res.text();
  const id = res.headers.get('x-goodput-request-id');
  const rec = await fetch(`${url}/admin/decisions/${id}`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  return ((await rec.json()) as { demand: Demand }).demand;
}

async function stop(proc: GoodputProcess): Promise<void> {
  proc.child.kill('SIGTERM');
  assert.deepEqual(await proc.exited, { code: 0, signal: null }, proc.output());
}

function logged(proc: GoodputProcess, pattern: RegExp): Record<string, unknown> | undefined {
  return proc.jsonLines().find((l) => pattern.test(String(l.msg)));
}

/**
 * A gateway learns the lengths of `n` + 1 replies, then is stopped; resolves with the p90 of
 * what the default tenant's replies taught it (the next request's, had it gone on).
 */
let taught = 0;
async function teach(args: string[], n = 2 * MIN_SAMPLES): Promise<number> {
  const log = join(dir, `teach-${++taught}.log`);
  const { url, proc } = await serve(...args, '--decisions', log);
  const cold = await ask(url);
  assert.equal(cold.output_source, 'prior');
  assert.equal(cold.kv_reserved_tokens, cold.input_tokens + 4_096);
  await Promise.all(Array.from({ length: n }, () => ask(url)));
  await stop(proc);
  const lengths = readFileSync(log, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"outcome"'))
    .map((l) => (JSON.parse(l) as { outcome: { output_tokens: number } }).outcome.output_tokens)
    .sort((a, b) => a - b);
  assert.equal(lengths.length, n + 1);
  return Math.ceil(percentileSorted(lengths, 90) - 1e-9);
}

test('a restart from the saved file predicts and reserves as the stopped gateway had learned', async () => {
  const state = join(dir, 'state.json');
  const p90 = await teach(['--learned-state', state]);
  const saved = JSON.parse(readFileSync(state, 'utf8')) as {
    format: string;
    output_lengths: { class: string; outputs: number[]; ended: number }[];
  };
  assert.equal(saved.format, 'goodput.learned-state');
  const interactive = saved.output_lengths.find((c) => c.class === 'interactive');
  assert.ok(interactive !== undefined && interactive.outputs.length === 2 * MIN_SAMPLES + 1);

  const { url, proc } = await serve('--learned-state', state);
  const line = logged(proc, /^output lengths restored/);
  assert.ok(line !== undefined, proc.output());
  assert.deepEqual(line.classes, { interactive: 2 * MIN_SAMPLES + 1 });
  const first = await ask(url);
  assert.equal(first.output_source, 'tenant');
  assert.equal(first.output_p90, p90);
  assert.ok(first.kv_reserved_tokens < first.input_tokens + 4_096, JSON.stringify(first));
  const metrics = await (await fetch(`${url}/metrics`)).text();
  assert.match(metrics, /^goodput_learned_state_restored 1$/m);
  await stop(proc);
});

test('a state that cannot be read starts cold, saying why; the next save replaces it', async () => {
  const state = join(dir, 'bad.json');
  writeFileSync(state, JSON.stringify({ format: 'goodput.learned-state', version: 7 }));
  const { url, proc } = await serve('--learned-state', state, '--learned-state-interval', '0.2');
  const line = logged(proc, /is not valid/);
  assert.ok(line !== undefined, proc.output());
  assert.match(String(line.msg), /version: expected one of 1, got 7/);
  assert.equal((await ask(url)).output_source, 'prior');
  await until('the next save', () => readFileSync(state, 'utf8').includes('"version":1'));
  const metrics = await (await fetch(`${url}/metrics`)).text();
  assert.match(metrics, /^goodput_learned_state_restored 0$/m);
  assert.match(metrics, /^goodput_learned_state_saves_total\{result="ok"\} [1-9]/m);
  await stop(proc);
});

test('a state file in no directory, or a directory, is refused at start, naming the flag', async () => {
  const r = await runGoodput(['serve', '--learned-state', join(dir, 'nowhere', 'state.json')]);
  assert.equal(r.code, 2, r.out);
  assert.match(r.out, /--learned-state: expected a file in a directory that exists/);
  const isDir = await runGoodput(['serve', '--learned-state', dir]);
  assert.equal(isDir.code, 2, isDir.out);
  assert.match(isDir.out, /--learned-state: expected a file, not a directory/);
  const noRedis = await runGoodput(['serve', '--learned-state', 'redis']);
  assert.equal(noRedis.code, 2, noRedis.out);
  assert.match(noRedis.out, /--learned-state: expected a file path, or redis with --redis/);
});

test('in Redis, a new gateway replica starts from what another learned', async () => {
  requireRedisServer();
  const redis = await startRedis();
  const shared = ['--redis', redis.url, '--learned-state', 'redis'];
  const p90 = await teach(shared);
  const { url, proc } = await serve(...shared);
  assert.ok(logged(proc, /^output lengths restored/) !== undefined, proc.output());
  const first = await ask(url);
  assert.equal(first.output_source, 'tenant');
  assert.equal(first.output_p90, p90);
  await stop(proc);
  // Redis gone: the next replica starts cold, saying so, and serves.
  await redis.kill();
  const alone = await serve(...shared, '--learned-state-interval', '0.2');
  assert.ok(logged(alone.proc, /could not be read: starting cold/) !== undefined);
  assert.equal((await ask(alone.url)).output_source, 'prior');
  // Nothing is saved over what it could not read; each interval's save counts as failed in
  // /metrics, and the log said why once.
  await until('a failed save counted', async () =>
    /^goodput_learned_state_saves_total\{result="error"\} [2-9]/m.test(
      await (await fetch(`${alone.url}/metrics`)).text(),
    ),
  );
  assert.equal(
    alone.proc.jsonLines().filter((l) => /could not be read/.test(String(l.msg))).length,
    1,
  );
  await stop(alone.proc);
});

test('SIGTERM with streams in flight: they finish, and the state saved at exit has learned from them', async () => {
  const state = join(dir, 'draining.json');
  // 20 ms a step: 100 tokens take 2 s, so the streams are mid-way when the signal comes.
  const { url, proc } = await serve('--learned-state', state, '--profile', 'const:step_ms=20');
  const streams = await Promise.all(
    Array.from({ length: 4 }, async () => {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: MODEL,
          messages: [{ role: 'user', content: 'hello there' }],
          max_tokens: 100,
          stream: true,
        }),
      });
      assert.equal(res.status, 200);
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      return reader;
    }),
  );
  proc.child.kill('SIGTERM');
  for (const reader of streams) {
    let text = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      text += new TextDecoder().decode(r.value);
    }
    assert.match(text, /data: \[DONE\]/);
    assert.doesNotMatch(text, /shutting_down/);
  }
  assert.deepEqual(await proc.exited, { code: 0, signal: null }, proc.output());
  const saved = JSON.parse(readFileSync(state, 'utf8')) as {
    output_lengths: { class: string; outputs: number[]; capped: number[]; ended: number }[];
  };
  const interactive = saved.output_lengths.find((c) => c.class === 'interactive');
  assert.deepEqual(interactive?.outputs, [100, 100, 100, 100]);
  assert.deepEqual(interactive?.capped, [0, 1, 2, 3]);
  assert.equal(interactive?.ended, 4);
});
