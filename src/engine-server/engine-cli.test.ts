// `goodput engine` as a process: it prints the URL it serves, answers on it, and exits cleanly on
// SIGTERM; a bad flag fails at once, naming the flag.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';

test('goodput engine serves on the URL it prints and stops on SIGTERM', async () => {
  const child = spawn(
    process.execPath,
    [
      'bin/goodput.js',
      'engine',
      '--port',
      '0',
      '--profile',
      'const:step_ms=2',
      '--served-model-name',
      'sim',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  try {
    let out = '';
    child.stdout.setEncoding('utf8');
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: string) => {
        out += chunk;
        const m = /serving sim at (http:\/\/\S+)\/v1/.exec(out);
        if (m !== null) resolve(m[1]);
      });
      child.once('exit', (code) => reject(new Error(`exited ${code} before serving: ${out}`)));
    });
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

test('goodput engine rejects a bad flag value with exit code 2', () => {
  const r = spawnSync(process.execPath, ['bin/goodput.js', 'engine', '--crash-rate', '-1'], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--crash-rate: expected a number in \[0, 1\], got "-1"/);
});
