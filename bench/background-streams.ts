// Background responses asked with `stream: true`, against foreground streams, on two
// `goodput serve` replicas (each its embedded fleet) sharing a throwaway redis-server. The same
// `--requests` Responses requests (`--output` tokens each) are sent at `--rate` a second to
// replica A, twice: as foreground streams, then as background streams. Each background stream
// is also followed from replica B from its first event (`GET /v1/responses/{id}?stream=true`),
// which takes A's log from Redis. Per way: the client's time to its first text delta (p50, p99),
// and streams that ran to their end. For B's readers: how much later than A's reader each
// event reached them (p50, p99, max), whether every stream was told the same, byte for byte,
// and Redis commands and the CPU of A, B and Redis per background response. A round of 20 each
// way warms both replicas first.
// `--root DIR` runs the replicas of another checkout, to compare two versions side by side.
// Usage: node bench/background-streams.ts [--requests 200] [--rate 20] [--output 256] [--root DIR]
import { FLEET_ARGS, flag, intFlag } from './bench-args.ts';
import { metric, startGoodput, startRedisServer } from './live-processes.ts';
import { cpuMs } from './proc-cpu.ts';

const N = intFlag('--requests') ?? 200;
const OUTPUT = intFlag('--output') ?? 256;
const RATE = Number(flag('--rate') ?? 20);
const MODEL = flag('--model') ?? 'llama-3-8b';

/** One stream as a client read it: each event's text and when it came (ms since sent). */
interface Read {
  readonly events: string[];
  readonly at: number[];
  readonly firstDeltaMs: number;
}

/** Reads an SSE answer to its end, timing each event from `t0`. */
async function readStream(res: Response, t0: number): Promise<Read> {
  const events: string[] = [];
  const at: number[] = [];
  let firstDeltaMs = NaN;
  let rest = '';
  const decoder = new TextDecoder();
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    rest += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = rest.indexOf('\n\n')) >= 0) {
      const event = rest.slice(0, end + 2);
      rest = rest.slice(end + 2);
      const now = performance.now() - t0;
      if (Number.isNaN(firstDeltaMs) && event.startsWith('event: response.output_text.delta'))
        firstDeltaMs = now;
      events.push(event);
      at.push(now);
    }
  }
  return { events, at, firstDeltaMs };
}

const quantile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? NaN);
};

const LAST = /^event: response\.(completed|incomplete)\n/;

const { url: redisUrl, client: redis, stop: stopRedis, pid: redisPid } = await startRedisServer();
/** Redis's calls so far by command (EVALSHA counted once, whatever its script does). */
const commands = async () => {
  const calls = new Map<string, number>();
  for (const m of (await redis.info('commandstats')).matchAll(/cmdstat_(\S+?):calls=(\d+)/g))
    calls.set(m[1], Number(m[2]));
  return calls;
};

const shared = ['serve', '--redis', redisUrl, '--gateway-replicas', '2', ...FLEET_ARGS];
const root = flag('--root');
const [a, b] = [await startGoodput(shared, root), await startGoodput(shared, root)];

const body = (i: number, background: boolean) =>
  JSON.stringify({
    model: MODEL,
    input: `Write the incident review number ${i} for the operations team.`,
    max_output_tokens: OUTPUT,
    stream: true,
    ...(background ? { background: true } : {}),
  });

async function run(background: boolean, n = N) {
  const t0 = performance.now();
  const posted: Read[] = [];
  const followed: Read[] = [];
  const lags: number[] = [];
  let same = 0;
  let refused = 0;
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      await new Promise((r) =>
        setTimeout(r, Math.max(0, t0 + (i * 1000) / RATE - performance.now())),
      );
      const sent = performance.now();
      const res = await fetch(`${a.url}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: body(i, background),
      });
      if (res.status !== 200) {
        refused++;
        await res.text();
        return;
      }
      if (!background) {
        posted.push(await readStream(res, sent));
        return;
      }
      // B follows it from its first event as soon as its id is known: the first chunk has it.
      let follow: Promise<Read> | undefined;
      const tee = res.body?.tee() as [ReadableStream, ReadableStream];
      const own = readStream(new Response(tee[0]), sent);
      const reader = tee[1].getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      void reader.cancel();
      const id = /"id":"(resp_[^"]+)"/.exec(first)?.[1];
      if (id !== undefined)
        follow = fetch(`${b.url}/v1/responses/${id}?stream=true`).then((r) => readStream(r, sent));
      const [mine, theirs] = await Promise.all([own, follow]);
      posted.push(mine);
      if (theirs === undefined) return;
      followed.push(theirs);
      if (theirs.events.join('') === mine.events.join('')) same++;
      for (let e = 0; e < Math.min(mine.at.length, theirs.at.length); e++)
        lags.push(theirs.at[e] - mine.at[e]);
    }),
  );
  const ttft = posted.map((r) => r.firstDeltaMs).filter((x) => !Number.isNaN(x));
  return {
    way: background ? 'background stream' : 'foreground stream',
    ttft_p50_ms: quantile(ttft, 0.5),
    ttft_p99_ms: quantile(ttft, 0.99),
    ran_to_end: posted.filter((r) => LAST.test(r.events.at(-1) ?? '')).length,
    refused,
    followed_on_b: followed.length,
    told_the_same: background ? same : '',
    lag_p50_ms: background ? quantile(lags, 0.5) : '',
    lag_p99_ms: background ? quantile(lags, 0.99) : '',
    lag_max_ms: background ? quantile(lags, 1) : '',
  };
}

try {
  // Both replicas warmed up first (their code compiled, their connections open), both ways.
  await run(false, 20);
  await run(true, 20);
  const fore = await run(false);
  const before = await commands();
  const pids = [a.child.pid, b.child.pid, redisPid] as number[];
  const cpuBefore = pids.map((p) => cpuMs(p));
  const back = await run(true);
  const after = await commands();
  const cpu = pids.map((p, i) => ((cpuMs(p) - cpuBefore[i]) / back.ran_to_end).toFixed(2));
  const each = [...after].map(
    ([c, n]) => [c, (n - (before.get(c) ?? 0)) / back.ran_to_end] as const,
  );
  const perResponse = each.reduce((sum, [, n]) => sum + n, 0);
  const byCommand = each
    .filter(([, n]) => n >= 0.5)
    .sort((x, y) => y[1] - x[1])
    .map(([c, n]) => `${c} ${n.toFixed(1)}`)
    .join(', ');
  const kept = metric(
    await (await fetch(`${a.url}/metrics`)).text(),
    'goodput_background_responses_total',
  );
  console.log(
    `${N} Responses streams of ${OUTPUT} output tokens at ${RATE}/s to replica A; background ones followed from B too`,
  );
  console.table([fore, back]);
  console.log(
    `Redis commands per background response: ${perResponse.toFixed(1)} (${byCommand}); A counted ${kept} background responses ended`,
  );
  console.log(`CPU ms per background response: A ${cpu[0]}, B ${cpu[1]}, Redis ${cpu[2]}`);
} finally {
  for (const g of [a, b]) g.child.kill('SIGTERM');
  await Promise.all([a, b].map((g) => new Promise((r) => g.child.once('exit', r))));
  await stopRedis();
}
