// How fast `goodput bench` can send: open-loop runs at rising rates against bench/bare-stream.ts
// (its own process, answering at once), each for a few seconds. Reports the achieved request
// rate and the generator's send lag; the ceiling is the highest rate whose p99 lag stays small
// against the gaps it schedules, i.e. where the client, not the server, still keeps time.
// Usage: node bench/loadgen-ceiling.ts [--rates 500,1000,2000,4000,8000] [--seconds 5]
import { spawn } from 'node:child_process';
import { REPO_ROOT, flag } from './bench-args.ts';
import { runBench } from '../src/loadgen/run-bench.ts';
import { wallClock } from '../src/runtime/wall-clock.ts';
import { wallTimers } from '../src/runtime/wall-timers.ts';

const rates = (flag('--rates') ?? '500,1000,2000,4000,8000').split(',').map(Number);
const seconds = Number(flag('--seconds') ?? '5');

const server = spawn(process.execPath, ['bench/bare-stream.ts'], {
  cwd: REPO_ROOT,
  stdio: ['ignore', 'pipe', 'inherit'],
});
const url = await new Promise<string>((resolve) =>
  server.stdout.once('data', (d) => resolve(String(d).trim())),
);
console.log(
  '| offered req/s | achieved req/s | completed | failed | send lag p50 / p99 / max (ms) |',
);
console.log('| ---: | ---: | ---: | ---: | ---: |');
for (const rate of rates) {
  const run = await runBench(
    {
      baseUrl: url,
      model: 'm',
      endpoint: 'completions',
      workload: { rate, numRequests: rate * seconds, input: 'fixed:8', output: 'fixed:2' },
      seed: 1,
      sendClass: false,
      percentiles: [50, 99],
      timeoutMs: 60_000,
    },
    { clock: wallClock, timers: wallTimers() },
  );
  const lags = run.records.map((r) => r.sentMs - r.dueMs).sort((a, b) => a - b);
  const m = run.metrics as Record<string, number>;
  console.log(
    `| ${rate} | ${m.request_throughput.toFixed(0)} | ${m.completed} | ${m.failed} | ${lags[Math.floor(lags.length / 2)].toFixed(1)} / ${m.p99_send_lag_ms.toFixed(1)} / ${m.max_send_lag_ms.toFixed(1)} |`,
  );
}
server.kill('SIGTERM');
