// An agent's conversation through `goodput serve`, two ways: each turn sent whole, as a
// stateless agent sends it (`store: false`, the earlier turns and replies carried back as
// input), and each turn sent as what is new beside `previous_response_id`, the rest kept by the
// gateway (in memory, and in a real redis-server when one can be started). `--conversations`
// conversations of `--turns` turns run side by side, each turn a user message of `--words`
// words and a reply of 16 tokens, over real HTTP on the embedded fleet. Per way: the bytes a
// turn uploads, the gateway process's CPU per turn (all of it, its fleet thread included, and
// its main thread alone: HTTP, admission, the relay), and the client's time per turn, pooled
// over `--rounds` rounds of each way, in turn.
// Usage: node bench/agent-turns.ts [--conversations 8] [--turns 30] [--words 150] [--rounds 4]
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { cpus } from 'node:os';
import { REPO_ROOT, flag } from './bench-args.ts';
import { cpuMs } from './proc-cpu.ts';
import { percentileSorted } from '../src/core/stats/percentile.ts';

const CONVERSATIONS = Number(flag('--conversations') ?? 8);
const TURNS = Number(flag('--turns') ?? 30);
const WORDS = Number(flag('--words') ?? 150);
const ROUNDS = Number(flag('--rounds') ?? 4);
const MODEL = 'llama-3-8b';

const VOCABULARY = 'the backup job fails with slow down errors since the file count doubled'.split(
  ' ',
);
const said = (conversation: number, turn: number) =>
  Array.from(
    { length: WORDS },
    (_, i) => VOCABULARY[(i * 7 + conversation * 3 + turn) % VOCABULARY.length],
  ).join(' ');

async function freePort(): Promise<number> {
  return await new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => ok(port));
    });
  });
}

async function startServe(extra: string[]): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    ['bin/goodput.js', 'serve', '--port', '0', '--profile', 'const:step_ms=5', ...extra],
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /OpenAI API at (http[^\s"]+?)\/v1/.exec(out);
      if (m) ok(m[1]);
    });
    child.once('exit', (code) => fail(new Error(`goodput serve exited ${code}: ${out}`)));
  });
  return { url, child };
}

interface Tally {
  bytes: number;
  turns: number;
  failed: number;
  cpuMs: number;
  /** Of the gateway's main thread alone: its HTTP, admission and relay, not the fleet's. */
  loopCpuMs: number;
  turnMs: number[];
  /** What ended the conversations that failed, and at which turn. */
  why: Set<string>;
}

/** One conversation, turn by turn: whole (everything carried back) or continued. */
async function converse(url: string, c: number, continued: boolean, t: Tally): Promise<void> {
  let history: unknown[] = [];
  let previous: string | undefined;
  for (let turn = 0; turn < TURNS; turn++) {
    const message = { role: 'user', content: said(c, turn) };
    const body = JSON.stringify({
      model: MODEL,
      instructions: 'You are a support engineer. Answer briefly.',
      max_output_tokens: 16,
      ignore_eos: true,
      ...(continued
        ? {
            input: [message],
            ...(previous === undefined ? {} : { previous_response_id: previous }),
          }
        : { input: [...history, message], store: false }),
    });
    const started = performance.now();
    const res = await fetch(`${url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const answer = (await res.json()) as {
      id: string;
      output: unknown[];
      error?: { code: string };
    };
    t.turnMs.push(performance.now() - started);
    t.bytes += Buffer.byteLength(body);
    t.turns++;
    if (res.status !== 200) {
      t.failed++;
      t.why.add(`${res.status} ${answer.error?.code ?? ''} at turn ${turn + 1}`);
      return;
    }
    previous = answer.id;
    history = [...history, message, ...answer.output];
  }
}

const empty = (): Tally => ({
  bytes: 0,
  turns: 0,
  failed: 0,
  cpuMs: 0,
  loopCpuMs: 0,
  turnMs: [],
  why: new Set(),
});

/** Every conversation side by side, one way; its tally added to `t`. */
async function run(url: string, pid: number, continued: boolean, t = empty()): Promise<Tally> {
  const before = cpuMs(pid);
  const loopBefore = cpuMs(pid, pid);
  await Promise.all(
    Array.from({ length: CONVERSATIONS }, (_, c) => converse(url, c, continued, t)),
  );
  t.cpuMs += cpuMs(pid) - before;
  t.loopCpuMs += cpuMs(pid, pid) - loopBefore;
  return t;
}

/** A throwaway redis-server's URL, or undefined when there is none to start. */
async function redisUrl(): Promise<{ url: string; child: ChildProcess } | undefined> {
  if (spawnSync('redis-server', ['--version']).status !== 0) return undefined;
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  await new Promise((r) => setTimeout(r, 300));
  return { url: `redis://127.0.0.1:${port}`, child };
}

const q = (xs: number[], p: number) => percentileSorted(Float64Array.from(xs).sort(), p);
console.log(`machine: ${cpus()[0]?.model} × ${cpus().length}, node ${process.version}`);
console.log(
  `${CONVERSATIONS} conversations × ${TURNS} turns, ${WORDS} words a turn, 16 tokens a reply\n`,
);
console.log(
  '| way | kept in | turns (failed) | bytes a turn | gateway CPU ms a turn: all / main thread | turn p50 / p99 ms |',
);
console.log('| --- | --- | ---: | ---: | ---: | ---: |');
const redis = await redisUrl();
const stores: [string, string[]][] = [['memory', []]];
if (redis !== undefined) stores.push(['redis', ['--redis', redis.url]]);
try {
  for (const [kept, extra] of stores) {
    const serve = await startServe(extra);
    try {
      const pid = serve.child.pid as number;
      // Warm up: a run thrown away. Then the two ways in turn, pooled over the rounds.
      await run(serve.url, pid, false);
      const ways = { whole: empty(), continued: empty() };
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? [false, true] : [true, false];
        for (const continued of order) {
          await run(serve.url, pid, continued, continued ? ways.continued : ways.whole);
        }
      }
      for (const [way, t] of Object.entries(ways)) {
        console.log(
          `| ${way} | ${way === 'continued' ? kept : '—'} | ${t.turns} (${t.failed}) | ` +
            `${Math.round(t.bytes / t.turns).toLocaleString('en')} | ` +
            `${(t.cpuMs / t.turns).toFixed(2)} / ${(t.loopCpuMs / t.turns).toFixed(2)} | ` +
            `${q(t.turnMs, 50).toFixed(1)} / ${q(t.turnMs, 99).toFixed(1)} |`,
        );
        if (t.why.size > 0) console.log(`|   failed: ${[...t.why].join('; ')} | | | | | |`);
      }
      const ratio = (f: (t: Tally) => number) => (f(ways.continued) / f(ways.whole)).toFixed(2);
      console.log(
        `| continued ÷ whole (${kept}) | | | ${ratio((t) => t.bytes)}× | ` +
          `${ratio((t) => t.cpuMs)}× / ${ratio((t) => t.loopCpuMs)}× | |`,
      );
    } finally {
      serve.child.kill('SIGTERM');
    }
  }
} finally {
  redis?.child.kill('SIGKILL');
}
