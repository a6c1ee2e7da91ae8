// `goodput serve --adapter-replicas K` on the embedded fleet, through a real process: each
// adapter is loaded on K of the replicas, as replicas started with different --lora-modules,
// and every request runs on one that loads its adapter, whether the engines step on the
// gateway's loop or on a thread of their own. A K the fleet cannot place is refused at start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runGoodput, startServe } from './process-kit.ts';
import { tempDir } from '../temp-dir.ts';

const ADAPTERS = ['a0', 'a1', 'a2', 'a3'];

for (const thread of [false, true]) {
  test(`--adapter-replicas 1 over 2 replicas${thread ? ' (--fleet-thread)' : ''}: each request runs where its adapter is loaded`, async () => {
    const decisions = join(tempDir('adapters'), 'decisions.jsonl');
    const gw = await startServe([
      ...(thread ? ['--fleet-thread'] : []),
      '--replicas',
      '2',
      '--lora-modules',
      ...ADAPTERS,
      '--max-loras',
      '2',
      '--adapter-replicas',
      '1',
      '--decisions',
      decisions,
    ]);
    try {
      for (let k = 0; k < 12; k++) {
        const model = ADAPTERS[k % 4];
        const res = await fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model,
            messages: [{ role: 'user', content: `question ${k}` }],
            max_tokens: 3,
          }),
        });
        assert.equal(res.status, 200, await res.clone().text());
        assert.equal(((await res.json()) as { model: string }).model, model);
      }
    } finally {
      gw.proc.child.kill('SIGTERM');
      await gw.proc.exited;
    }
    const admitted = readFileSync(decisions, 'utf8')
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as { msg: string; adapter?: string; route: { replica: number } | null },
      )
      .filter((r) => r.msg === 'decision' && r.route !== null);
    assert.equal(admitted.length, 12);
    // Adapter j is loaded on replica j mod 2 alone.
    for (const r of admitted) {
      assert.equal(r.route!.replica, ADAPTERS.indexOf(r.adapter!) % 2, JSON.stringify(r));
    }
  });
}

test('--adapter-replicas past the fleet, or with backends, is refused at start naming the flag', async () => {
  const lora = ['--lora-modules', 'a0', '--adapter-replicas'];
  for (const args of [
    [...lora, '3'],
    ['--backend', 'http://127.0.0.1:9', ...lora, '1'],
  ]) {
    const run = await runGoodput(['serve', '--port', '0', ...args]);
    assert.notEqual(run.code, 0, args.join(' '));
    assert.match(run.out, /--adapter-replicas/);
  }
});
