// The local engine pool end to end: a real `goodput serve --engine-pool local` starts one real
// `goodput engine` process, a burst of streams through the real `openai` client makes the
// controller scale out (new engines, each ready after its start-up delay), every stream ends
// whole, and once the burst is over and the scale-in window has passed it drains back to one —
// the engines it stops had no stream cut — and SIGTERM leaves no engine process behind, nor does
// a SIGKILL: an engine of the pool exits when its gateway does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startServe, until } from './process-kit.ts';
import { tempDir } from '../temp-dir.ts';

// The goodput preset without its gap guard: here the engines the pool starts are Node processes
// on the gateway's own two cores, and their start-up makes its loop late, so the guard would
// shed the burst that is meant to make the pool scale out. Engines on machines of their own
// (what a pool is for) take no CPU from the gateway.
const POLICY = join(tempDir('pool'), 'policy.yaml');
writeFileSync(
  POLICY,
  [
    'name: goodput',
    'policy_revision: goodput-pool-test',
    'admission: { type: goodput }',
    'dispatch: { type: flow-control }',
    'routing: { type: expected-completion }',
    'resilience: { shed_gap_ratio: 0 }',
    '',
  ].join('\n'),
);

const metric = async (url: string, name: string, labels: string): Promise<number> => {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? NaN : Number(line.split(' ').at(-1));
};

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('local engine pool: a burst scales out, every stream ends whole, then it drains back in', async (t) => {
  const { url, proc } = await startServe([
    '--policy',
    POLICY,
    '--engine-pool',
    'local',
    '--min-replicas',
    '1',
    '--max-replicas',
    '3',
    '--ready-time',
    '1-2',
    '--scale-in-window',
    '3',
  ]);
  const engines = () => metric(url, 'goodput_engine_pool_engines', 'state="ready"');
  // An engine is a new Node process loading the whole tree: on a busy 2-core machine, tens of seconds.
  await until('the first engine ready', async () => (await engines()) === 1, 60_000, 200);

  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
  let most = 1;
  const watch = setInterval(() => {
    void engines().then((n) => (most = Math.max(most, n || 0)));
  }, 250);
  // Whatever fails, nothing of this test keeps the file's process alive.
  t.after(() => {
    clearInterval(watch);
    proc.child.kill('SIGKILL');
  });
  // 240 streams of 200 tokens over 2.4 s: far more than one engine's capacity at SLO.
  const endings = await Promise.all(
    Array.from({ length: 240 }, async (_, i) => {
      await new Promise((r) => setTimeout(r, i * 10));
      try {
        const stream = await client.completions.create({
          model: 'llama-3-8b',
          prompt: 'tell me a story '.repeat(200),
          max_tokens: 200,
          stream: true,
        });
        let finish: string | null = null;
        for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
        return finish ?? 'no finish';
      } catch (e) {
        return `refused ${(e as { status?: number }).status ?? (e as Error).message}`;
      }
    }),
  );
  const counts: Record<string, number> = {};
  for (const e of endings) counts[e] = (counts[e] ?? 0) + 1;
  // A refusal at the door (429/503) is admission's answer, never a cut stream.
  const whole = (counts.length ?? 0) + (counts.stop ?? 0);
  const refused = Object.entries(counts)
    .filter(([k]) => k.startsWith('refused 429') || k.startsWith('refused 503'))
    .reduce((n, [, v]) => n + v, 0);
  assert.equal(whole + refused, endings.length, JSON.stringify(counts));
  assert.ok(whole > 0, JSON.stringify(counts));

  await until('scaled out to more than one engine', () => most > 1, 20_000, 200);
  // Drained, not just one engine ready: an engine leaves the ready count when its drain begins,
  // and is counted drained only once its streams have ended (on a busy machine, seconds later).
  const drained = () => metric(url, 'goodput_engine_pool_drains_total', 'outcome="drained"');
  await until(
    'drained back to one engine',
    async () => (await drained()) >= 1 && (await engines()) === 1,
    90_000,
    500,
  );
  clearInterval(watch);
  assert.equal(await metric(url, 'goodput_engine_pool_drains_total', 'outcome="cut"'), 0);

  const started = proc
    .jsonLines()
    .filter((l) => String(l.msg).startsWith('engine pool: starting an engine'))
    .map((l) => l.engine_pid as number);
  assert.ok(started.length >= 2, proc.output());
  proc.child.kill('SIGTERM');
  assert.deepEqual(await proc.exited, { code: 0, signal: null });
  await until('no engine process left', () => started.every((pid) => !alive(pid)), 10_000, 100);
});

test('local engine pool: a gateway killed outright takes its engines with it', async () => {
  const { url, proc } = await startServe([
    '--engine-pool',
    'local',
    '--min-replicas',
    '2',
    '--max-replicas',
    '2',
    '--ready-time',
    '1-2',
  ]);
  const ready = () => metric(url, 'goodput_engine_pool_engines', 'state="ready"');
  await until('both engines ready', async () => (await ready()) === 2, 60_000, 200);
  const started = proc
    .jsonLines()
    .filter((l) => String(l.msg).startsWith('engine pool: starting an engine'))
    .map((l) => l.engine_pid as number);
  assert.equal(started.length, 2, proc.output());
  // No SIGTERM, no drain: the gateway process simply ends, as after an OOM kill.
  proc.child.kill('SIGKILL');
  await proc.exited;
  await until('no engine outlives it', () => started.every((pid) => !alive(pid)), 10_000, 100);
});
