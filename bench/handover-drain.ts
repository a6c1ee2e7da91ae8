// A drain with background responses still queued. Two `goodput serve` replicas share a
// throwaway redis-server, in front of one `goodput engine` with `--seats` seats (10 ms a step).
// `--requests` background responses (`--output` tokens each, class batch) are asked of replica
// A, then A is sent SIGTERM with `--drain-timeout`. Measured: how long A took to exit, how many
// it handed over (its `drained` line), and — polled on B until each has ended — how they ended
// (completed or incomplete, failed by error code) and when the last did, from the SIGTERM.
// `--kill`: A is sent SIGKILL instead, as a crash; what it ran is then found on B once A has
// been silent 10 s. `--refuse-handover`: Redis takes no RPUSH (the handover's write) from the
// SIGTERM until A has exited, as a Redis that refuses writes at that moment would. `--root DIR`
// runs the gateways of another checkout (the engine is this one's), so two versions compare
// side by side on one machine.
// Usage: node bench/handover-drain.ts [--requests 40] [--seats 4] [--output 200]
//          [--drain-timeout 10] [--kill | --refuse-handover] [--root DIR]
import { createClient } from 'redis';
import { flag, intFlag } from './bench-args.ts';
import { metric, startGoodput, startRedisServer } from './live-processes.ts';

const N = intFlag('--requests') ?? 40;
const SEATS = intFlag('--seats') ?? 4;
const OUTPUT = intFlag('--output') ?? 200;
const DRAIN_S = Number(flag('--drain-timeout') ?? 10);
const ROOT = flag('--root');
const KILL = process.argv.includes('--kill');
const REFUSE = process.argv.includes('--refuse-handover');
const MODEL = 'llama-3-8b';

const SMALL = ['--profile', 'const:step_ms=10', '--max-num-seqs', String(SEATS)];
const redis = await startRedisServer();
const engine = await startGoodput(['engine', ...SMALL]);
const shared = ['serve', '--backend', engine.url, '--redis', redis.url, '--gateway-replicas', '2'];
const gateway = (more: string[]) => startGoodput([...shared, ...SMALL, ...more], ROOT);
const a = await gateway(['--drain-timeout', String(DRAIN_S)]);
const b = await gateway([]);
let aOut = '';
a.child.stdout?.on('data', (d: Buffer) => (aOut += d.toString()));

interface Asked {
  readonly id: string;
  readonly status: string;
}

try {
  const asked: Asked[] = [];
  for (let i = 0; i < N; i++) {
    const res = await fetch(`${a.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goodput-class': 'batch' },
      body: JSON.stringify({
        model: MODEL,
        input: `Write the incident review number ${i} for the operations team.`,
        max_output_tokens: OUTPUT,
        background: true,
      }),
    });
    const r = (await res.json()) as { id?: string; status?: string };
    if (res.status === 200 && r.id !== undefined) asked.push({ id: r.id, status: r.status ?? '' });
  }
  const queued = asked.filter((r) => r.status === 'queued').length;
  const admin = createClient({ url: redis.url });
  await admin.connect();
  if (REFUSE) await admin.sendCommand(['ACL', 'SETUSER', 'default', '-rpush']);
  const t0 = performance.now();
  a.child.kill(KILL ? 'SIGKILL' : 'SIGTERM');
  await new Promise((r) => a.child.once('exit', r));
  const exitedS = (performance.now() - t0) / 1000;
  if (REFUSE) await admin.sendCommand(['ACL', 'SETUSER', 'default', '+rpush']);
  await admin.quit();
  const drained = aOut
    .split('\n')
    .map((l) => (l.startsWith('{') ? (JSON.parse(l) as Record<string, unknown>) : {}))
    .find((l) => l.msg === 'drained');

  const ends = new Map<string, string>();
  let lastS = 0;
  while (ends.size < asked.length) {
    for (const { id } of asked) {
      if (ends.has(id)) continue;
      const r = (await (await fetch(`${b.url}/v1/responses/${id}`)).json()) as {
        status?: string;
        error?: { code?: string };
      };
      if (r.status === 'queued' || r.status === 'in_progress') continue;
      ends.set(id, r.status === 'failed' ? `failed: ${r.error?.code}` : (r.status ?? '?'));
      lastS = (performance.now() - t0) / 1000;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const tally: Record<string, number> = {};
  for (const end of ends.values()) tally[end] = (tally[end] ?? 0) + 1;
  const exposition = await (await fetch(`${b.url}/metrics`)).text();
  const handovers = (op: string) =>
    metric(exposition, 'goodput_background_handovers_total', { op });
  const [adopted, reclaimed] = [handovers('adopted'), handovers('reclaimed')];
  console.log(
    `${asked.length} background responses of ${OUTPUT} tokens asked of A (${queued} queued), ` +
      `${SEATS} engine seats, ` +
      (KILL ? 'A killed' : `A drained with --drain-timeout ${DRAIN_S}`) +
      (REFUSE ? ', Redis refusing the handover' : '') +
      (ROOT === undefined ? '' : ` (gateways of ${ROOT})`),
  );
  console.table({
    'A exited after (s)': exitedS.toFixed(1),
    'A handed over': drained?.handed_over ?? '-',
    'B adopted': adopted,
    'B reclaimed': reclaimed,
    'last ended after (s)': lastS.toFixed(1),
    ...tally,
  });
} finally {
  for (const g of [b, engine]) g.child.kill('SIGTERM');
  await Promise.all([b, engine].map((g) => new Promise((r) => g.child.once('exit', r))));
  await redis.stop();
}
