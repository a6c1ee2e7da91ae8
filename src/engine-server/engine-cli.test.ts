// `goodput engine` as a process: it prints the URL it serves, answers on it, and exits cleanly on
// SIGTERM; a bad flag fails at once, naming the flag.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';

/** `goodput engine` with `flags`, serving model `sim`, and the URL it prints. */
async function startEngine(...flags: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    ['bin/goodput.js', 'engine', '--port', '0', '--served-model-name', 'sim', ...flags],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout?.setEncoding('utf8');
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: string) => {
      out += chunk;
      const m = /serving sim at (http:\/\/\S+)\/v1/.exec(out);
      if (m !== null) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`exited ${code} before serving: ${out}`)));
  });
  return { child, url };
}

const complete = (url: string, fields: Record<string, unknown>) =>
  fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sim', prompt: 'hi', ignore_eos: true, ...fields }),
  });

test('goodput engine serves on the URL it prints and stops on SIGTERM', async () => {
  const { child, url } = await startEngine('--profile', 'const:step_ms=2');
  try {
    assert.equal((await fetch(`${url}/health`)).status, 200);
    const res = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim', prompt: 'hi', max_tokens: 3, ignore_eos: true }),
    });
    const body = (await res.json()) as { usage: { completion_tokens: number } };
    assert.equal(body.usage.completion_tokens, 3);
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    assert.deepEqual(await exited, [0, null]);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});

test('--shutdown-timeout: on SIGTERM new requests get 503 while running ones end whole, then it exits', async () => {
  // 40 tokens of 20 ms steps: each answer takes about 0.8 s.
  const { child, url } = await startEngine(
    '--profile',
    'const:step_ms=20',
    '--shutdown-timeout',
    '30',
  );
  try {
    const streamed = complete(url, { max_tokens: 40, stream: true }).then((r) => r.text());
    const whole = complete(url, { max_tokens: 40 }).then((r) => r.json());
    await new Promise((r) => setTimeout(r, 200));
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await fetch(`${url}/health`)).status, 503, 'draining');
    const refused = await complete(url, { max_tokens: 1 });
    assert.equal(refused.status, 503);
    assert.match(await refused.text(), /shutting down/);
    assert.match(await streamed, /"finish_reason":"length"[\s\S]*data: \[DONE\]/);
    assert.equal(
      ((await whole) as { usage: { completion_tokens: number } }).usage.completion_tokens,
      40,
    );
    assert.deepEqual(await exited, [0, null]);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});

test('without --shutdown-timeout, SIGTERM cuts what runs: a stream broken, a whole answer a 503', async () => {
  const { child, url } = await startEngine('--profile', 'const:step_ms=20');
  try {
    const streamed = complete(url, { max_tokens: 40, stream: true }).then(
      (r) =>
        r.text().then(
          () => 'read whole',
          () => 'broken',
        ),
      () => 'broken',
    );
    const whole = complete(url, { max_tokens: 40 });
    await new Promise((r) => setTimeout(r, 200));
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const cut = await whole;
    assert.equal(cut.status, 503, 'an answer, not a closed socket');
    assert.match(await cut.text(), /shutting_down/);
    assert.equal(await streamed, 'broken');
    assert.deepEqual(await exited, [0, null]);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});

test('goodput engine rejects a bad flag value with exit code 2', () => {
  const r = spawnSync(process.execPath, ['bin/goodput.js', 'engine', '--crash-rate', '-1'], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--crash-rate: expected a number in \[0, 1\], got "-1"/);
});
