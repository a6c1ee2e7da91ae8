// The local engine pool end to end: a real `goodput serve --engine-pool local` starts one real
// `goodput engine` process, a burst of streams through the real `openai` client makes the
// controller scale out (new engines, each ready after its start-up delay), every stream ends
// whole, and once the burst is over and the scale-in window has passed it drains back to one —
// the engines it stops had no stream cut — and SIGTERM leaves no engine process behind, nor does
// a SIGKILL: an engine of the pool exits when its gateway does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServe, until } from './process-kit.ts';
import { burstEndsWhole, metricAt, poolServeArgs } from './pool-burst.ts';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('local engine pool: a burst scales out, every stream ends whole, then it drains back in', async (t) => {
  const { url, proc } = await startServe([...poolServeArgs(), '--engine-pool', 'local']);
  const engines = () => metricAt(url, 'goodput_engine_pool_engines', 'state="ready"');
  // An engine is a new Node process loading the whole tree: on a busy 2-core machine, tens of seconds.
  await until('the first engine ready', async () => (await engines()) === 1, 60_000, 200);

  let most = 1;
  const watch = setInterval(() => {
    void engines().then((n) => (most = Math.max(most, n || 0)));
  }, 250);
  // Whatever fails, nothing of this test keeps the file's process alive.
  t.after(() => {
    clearInterval(watch);
    proc.child.kill('SIGKILL');
  });
  await burstEndsWhole(url);

  // Another engine is another Node process to load: as long as the first may take.
  await until('scaled out to more than one engine', () => most > 1, 60_000, 200);
  // Drained, not just one engine ready: an engine leaves the ready count when its drain begins,
  // and is counted drained only once its streams have ended (on a busy machine, seconds later).
  const drained = () => metricAt(url, 'goodput_engine_pool_drains_total', 'outcome="drained"');
  await until(
    'drained back to one engine',
    async () => (await drained()) >= 1 && (await engines()) === 1,
    90_000,
    500,
  );
  clearInterval(watch);
  assert.equal(await metricAt(url, 'goodput_engine_pool_drains_total', 'outcome="cut"'), 0);

  const started = proc
    .jsonLines()
    .filter((l) => String(l.msg).startsWith('engine pool: starting an engine'))
    .map((l) => l.engine_pid as number);
  assert.ok(started.length >= 2, proc.output());
  proc.child.kill('SIGTERM');
  assert.deepEqual(await proc.exited, { code: 0, signal: null });
  await until('no engine process left', () => started.every((pid) => !alive(pid)), 10_000, 100);
});

test('local engine pool: its engines run the engine flags the gateway was given; a gateway killed outright takes them with it', async () => {
  const { url, proc } = await startServe([
    '--engine-pool',
    'local',
    '--min-replicas',
    '2',
    '--max-replicas',
    '2',
    '--ready-time',
    '1-2',
    '--lora-modules',
    'sql-lora',
    '--max-num-seqs',
    '8',
  ]);
  const ready = () => metricAt(url, 'goodput_engine_pool_engines', 'state="ready"');
  await until('both engines ready', async () => (await ready()) === 2, 60_000, 200);
  // The adapter the gateway plans with is one its engines serve.
  const adapted = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sql-lora', prompt: 'SELECT', max_tokens: 2 }),
  });
  assert.equal(adapted.status, 200, await adapted.text());
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
