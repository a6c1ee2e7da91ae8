// What an agent's turn costs the gateway sent whole, against sent as only what is new beside
// `previous_response_id`, for conversations of 5, 25 and 100 turns (each turn a user message of
// about 60 words, a reply's text and a tool call, and the tool's output). Whole: the body read
// as the gateway reads it (parsed, made into the chat it is). Continued: the new turn's body
// read, the kept record loaded from the store and the whole chat made. Kept: the record
// stringified and saved, as every stored response is once it ends. Polled: the record loaded as
// a poll of a background response loads it — whole, and its head alone (the response without
// its conversation, as the gateway reads it). Stores: memory, and a real
// redis-server when one can be started (or `--redis URL`). Medians of `--rounds`, each timed
// over `--iterations` calls.
// Usage: node bench/kept-responses.ts [--rounds 5] [--iterations 200] [--redis URL]
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { cpus } from 'node:os';
import { Registry } from 'prom-client';
import { flag } from './bench-args.ts';
import { turn, words } from './conversation-kit.ts';
import { readRequest } from '../src/gateway/http/read-request.ts';
import type { CompletionsDeps } from '../src/gateway/http/completions.ts';
import { continued, keeper } from '../src/gateway/http/kept-responses.ts';
import { loadHead, loadKept, type KeepingDeps } from '../src/gateway/http/kept-records.ts';
import { StateMetrics } from '../src/gateway/state-metrics.ts';
import { MemoryStore } from '../src/gateway/shared/memory-store.ts';
import type { SharedStore } from '../src/gateway/shared/shared-store.ts';
import { wallClock } from '../src/runtime/wall-clock.ts';
import { wallTimers } from '../src/runtime/wall-timers.ts';

const ROUNDS = Number(flag('--rounds') ?? 5);
const ITERATIONS = Number(flag('--iterations') ?? 200);
const TURNS = [5, 25, 100, 400];

const TOOLS = Array.from({ length: 8 }, (_, i) => ({
  type: 'function',
  name: `tool_${i}`,
  description: words(12, i),
  parameters: { type: 'object', properties: { path: { type: 'string' } } },
}));

const readDeps = { servedModels: ['m'], fillerReplies: false } as unknown as CompletionsDeps;

/** µs a call, wall and this process's CPU (a Redis call's wait on the socket is wall only). */
async function median(run: () => unknown): Promise<{ wall: number; cpu: number }> {
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const start = performance.now();
    const used = process.cpuUsage();
    for (let i = 0; i < ITERATIONS; i++) await run();
    const { user, system } = process.cpuUsage(used);
    wall.push(((performance.now() - start) / ITERATIONS) * 1000);
    cpu.push((user + system) / ITERATIONS);
  }
  const mid = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return { wall: mid(wall), cpu: mid(cpu) };
}

const us = (t: { wall: number; cpu: number }) => `${t.wall.toFixed(0)} / ${t.cpu.toFixed(0)}`;

async function freePort(): Promise<number> {
  return await new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => ok(port));
    });
  });
}

/** A Redis store: at `--redis`, or a throwaway redis-server; none when neither can be had. */
async function redisStore(): Promise<{ store: SharedStore; server?: ChildProcess } | undefined> {
  let url = flag('--redis');
  let server: ChildProcess | undefined;
  if (url === undefined) {
    if (spawnSync('redis-server', ['--version']).status !== 0) return undefined;
    const port = await freePort();
    server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    url = `redis://127.0.0.1:${port}`;
    await new Promise((r) => setTimeout(r, 300));
  }
  const { RedisStore } = await import('../src/gateway/shared/redis-store.ts');
  const store = new RedisStore({
    url,
    clock: wallClock,
    timers: wallTimers(),
    newId: () => String(Math.random()),
  });
  await store.ping();
  return { store, server };
}

const stores: [string, SharedStore][] = [['memory', new MemoryStore({ clock: wallClock })]];
const redis = await redisStore();
if (redis !== undefined) stores.push(['redis', redis.store]);

console.log(
  `rounds ${ROUNDS} × ${ITERATIONS} calls; ${cpus()[0]?.model ?? 'cpu'}; node ${process.version}`,
);
console.log(
  '| turns | store | whole body | new turn body | record | read whole, µs wall / CPU | read continued | continued ÷ whole, CPU | keep | poll, record whole | poll, its head | whole ÷ head, CPU |',
);
console.log('| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
try {
  for (const turns of TURNS) {
    const history = Array.from({ length: turns - 1 }, (_, t) => turn(t)).flat();
    const next = turn(turns - 1).slice(0, 1);
    const asked = { model: 'm', instructions: words(30, 0), tools: TOOLS, stream: true };
    const whole = JSON.stringify({ ...asked, input: [...history, ...next] });
    for (const [name, store] of stores) {
      const deps: KeepingDeps = {
        store,
        keepResponses: true,
        metrics: { state: new StateMetrics(new Registry()) },
      };
      // The earlier turns as kept: a record whose input is all but the last reply.
      const previousId = `resp_prev_${turns}`;
      const earlier = readRequest(
        'responses',
        JSON.stringify({ ...asked, input: history.slice(0, -3) }),
        readDeps,
      );
      const reply = history.slice(-3).map((it) => ({ ...it, status: 'completed' }));
      const response = { id: previousId, object: 'response', status: 'completed', output: reply };
      const keep = keeper(earlier, { id: `prev_${turns}`, tenant: 'acme' }, deps);
      if (keep === undefined) throw new Error('not kept');
      await keep(response);
      const record = (await store.loadResponse('acme', previousId)) ?? '';
      const small = JSON.stringify({ ...asked, input: next, previous_response_id: previousId });
      const readWhole = await median(() => readRequest('responses', whole, readDeps));
      const readContinued = await median(() =>
        continued(readRequest('responses', small, readDeps), 'acme', deps),
      );
      const keepUs = await median(() => keep(response));
      const pollWhole = await median(() => loadKept(deps, 'acme', previousId));
      const pollHead = await median(() => loadHead(deps, 'acme', previousId));
      const kib = (s: string) => `${(Buffer.byteLength(s) / 1024).toFixed(1)} KiB`;
      console.log(
        `| ${turns} | ${name} | ${kib(whole)} | ${kib(small)} | ${kib(record)} | ` +
          `${us(readWhole)} | ${us(readContinued)} | ` +
          `${(readContinued.cpu / readWhole.cpu).toFixed(2)}× | ${us(keepUs)} | ` +
          `${us(pollWhole)} | ${us(pollHead)} | ${(pollWhole.cpu / pollHead.cpu).toFixed(1)}× |`,
      );
    }
  }
} finally {
  await redis?.store.close();
  redis?.server?.kill('SIGKILL');
}
if (redis === undefined) console.log('(no redis-server on PATH and no --redis: memory only)');
