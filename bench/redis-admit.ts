// What one admission at the door costs in Redis: the ADMIT script's time inside the server
// (`INFO commandstats`, microseconds per EVALSHA) and the round trip as a gateway sees it, for
// each shape of tenant quota. `--root DIR` runs another checkout's store and script, to compare
// two versions on one server; a version that knows no request quota ignores it.
// Usage: node bench/redis-admit.ts [--admits 20000] [--concurrency 64] [--root DIR]
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { REPO_ROOT, flag, intFlag } from './bench-args.ts';
import { startRedisServer } from './live-processes.ts';
import { wallClock } from '../src/runtime/wall-clock.ts';
import { wallTimers } from '../src/runtime/wall-timers.ts';
import type { TenantQuotas } from '../src/core/request/tenant.ts';

const ADMITS = intFlag('--admits') ?? 20_000;
const CONCURRENCY = intFlag('--concurrency') ?? 64;
const root = resolve(flag('--root') ?? REPO_ROOT);

// Limits no run reaches: every admit is granted, so each shape does its whole work.
const SHAPES: Record<string, Omit<TenantQuotas, 'windowMs'>> = {
  none: {},
  tokens: { tokensPerWindow: 1e12 },
  'tokens+requests': { tokensPerWindow: 1e12, requestsPerWindow: 1e12 },
  'tokens+requests+slots': {
    tokensPerWindow: 1e12,
    requestsPerWindow: 1e12,
    maxConcurrentRequests: 1e9,
  },
};

const redis = await startRedisServer();
const { url, client: admin } = redis;

const { RedisStore } = (await import(
  resolve(root, 'src/gateway/shared/redis-store.ts')
)) as typeof import('../src/gateway/shared/redis-store.ts');
const store = new RedisStore({
  url,
  clock: wallClock,
  timers: wallTimers(),
  newId: () => randomUUID(),
});
await store.ping();

/** Server µs per EVALSHA since the last reset. */
async function scriptMicros(): Promise<number> {
  const info = await admin.sendCommand(['INFO', 'commandstats']);
  const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)/.exec(String(info));
  return m === null ? NaN : Number(m[3]);
}

async function run(name: string, quotas: Omit<TenantQuotas, 'windowMs'>, concurrency: number) {
  let n = 0;
  const one = async () => {
    for (; n < ADMITS;) {
      n++;
      const v = await store.admit({
        tenant: `bench-${name}`,
        requestId: randomUUID(),
        tokens: 500,
        attempt: 1,
        quotas: { windowMs: 60_000, ...quotas },
        retryBudgetRatio: 0.2,
      });
      if (!v.ok) throw new Error(`refused: ${v.reason}`);
      await v.lease.release();
    }
  };
  await admin.sendCommand(['CONFIG', 'RESETSTAT']);
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, one));
  const wallMs = performance.now() - t0;
  return { server: await scriptMicros(), perAdmitUs: (wallMs * 1_000) / ADMITS };
}

console.log(`checkout: ${root}; ${ADMITS} admits per shape; ${url}`);
console.log(
  'shape                   script µs  1 at a time: µs/admit+release  ' +
    `${CONCURRENCY} at once: admits/s`,
);
// A warm-up, so the scripts are loaded and the JIT has run.
await run('warm', SHAPES['tokens+requests+slots'] ?? {}, CONCURRENCY);
for (const [name, quotas] of Object.entries(SHAPES)) {
  const serial = await run(name, quotas, 1);
  const parallel = await run(name, quotas, CONCURRENCY);
  console.log(
    `${name.padEnd(22)}  ${serial.server.toFixed(2).padStart(9)}  ${serial.perAdmitUs.toFixed(1).padStart(22)}  ${Math.round(
      1e6 / parallel.perAdmitUs,
    )
      .toString()
      .padStart(19)}`,
  );
}
await store.close();
await redis.stop();
