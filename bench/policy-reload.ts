// What a policy's tenants cost the gateway as they grow, 10 to 10,000 tenants of one key each:
// - the API-key check every request makes, by the key's digest as the gateway does it, beside a
//   constant-time compare with every digest (how it was done before);
// - a reload of the file (read, parsed, validated, planned against the running policy), on the
//   event loop as `goodput policy check` does it, beside the gateway's reload, which reads on a
//   thread of its own: the longest the loop went without running a 1 ms timer meanwhile — how
//   long every stream waited for its next token — and the reload's own time;
// - the YAML parse alone: the parser's own duplicate-key check, beside the one-pass check.
// Medians of `--rounds`; CPU µs a key check, wall ms for the rest.
// Usage: node bench/policy-reload.ts [--rounds 5] [--tenants 10,100,1000,10000]
import { cpus, tmpdir } from 'node:os';
import { createHash, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { flag } from './bench-args.ts';
import { ApiKeys } from '../src/gateway/api-keys.ts';
import { GatewayMetrics } from '../src/gateway/gateway-metrics.ts';
import { SILENT_OPS_LOG } from '../src/gateway/ops-log.ts';
import { PolicyReloader } from '../src/gateway/policy-reloader.ts';
import { planReload } from '../src/gateway/reload-plan.ts';
import { parsePolicyText, readPolicyFile, type LoadedPolicy } from '../src/sim/policy-source.ts';

const ROUNDS = Number(flag('--rounds') ?? 5);
const SIZES = (flag('--tenants') ?? '10,100,1000,10000').split(',').map(Number);

const sha = (key: string) => createHash('sha256').update(key).digest();

function policyText(tenants: number, revision: string): string {
  const section: Record<string, unknown> = {};
  for (let i = 0; i < tenants; i++) {
    section[`tenant-${i}`] = {
      weight: 1 + (i % 4),
      quotas: { tokens_per_window: 2_000_000, max_concurrent_requests: 64 },
      api_keys_sha256: [sha(`sk-${i}`).toString('hex')],
    };
  }
  const doc = {
    name: 'prod',
    policy_revision: revision,
    admission: { type: 'goodput' },
    routing: { type: 'expected-completion' },
    tenants: section,
  };
  return stringify(doc);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** CPU µs one call of `fn` takes, median of the rounds, each over `calls` calls. */
function cpuMicros(fn: () => unknown, calls: number): number {
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const start = process.cpuUsage();
    for (let i = 0; i < calls; i++) fn();
    const used = process.cpuUsage(start);
    rounds.push((used.user + used.system) / calls);
  }
  return median(rounds);
}

/** The check as it was: a constant-time compare of the key's digest with every digest. */
function scanningKeys(running: LoadedPolicy): (key: string) => string | undefined {
  const entries = [...running.policy.tenants.named].flatMap(([tenant, t]) =>
    t.apiKeySha256.map((hex) => ({ digest: Buffer.from(hex, 'hex'), tenant })),
  );
  return (key) => {
    const digest = sha(key);
    let found: string | undefined;
    for (const e of entries) if (timingSafeEqual(digest, e.digest)) found ??= e.tenant;
    return found;
  };
}

/** Wall ms of `op`, and the longest the loop went without running a 1 ms timer meanwhile. */
async function stall(op: () => unknown): Promise<{ stallMs: number; tookMs: number }> {
  let last = performance.now();
  let longest = 0;
  const probe = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 1);
  await new Promise((r) => setTimeout(r, 20));
  longest = 0;
  last = performance.now();
  const start = performance.now();
  await op();
  const tookMs = performance.now() - start;
  await new Promise((r) => setTimeout(r, 5));
  clearInterval(probe);
  return { stallMs: Math.max(longest, performance.now() - last), tookMs };
}

const dir = mkdtempSync(join(tmpdir(), 'goodput-reload-bench-'));
const rows: string[][] = [];
for (const n of SIZES) {
  const path = join(dir, `policy-${n}.yaml`);
  writeFileSync(path, policyText(n, 'prod@1'));
  const running = readPolicyFile(path);
  const keys = new ApiKeys(running.policy.tenants);
  const scan = scanningKeys(running);
  const calls = Math.max(200, Math.floor(1_000_000 / n));
  const byDigest = cpuMicros(() => keys.tenantOf(`sk-${n >> 1}`), 20_000);
  const scanned = cpuMicros(() => scan(`sk-${n >> 1}`), calls);

  const onLoop: { stallMs: number; tookMs: number }[] = [];
  const offLoop: { stallMs: number; tookMs: number }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    writeFileSync(path, policyText(n, `prod@${2 * r + 2}`));
    onLoop.push(await stall(() => planReload(running, readPolicyFile(path))));
    const reloader = new PolicyReloader(running, {
      pipeline: { retenant: () => {} },
      metrics: new GatewayMetrics([]),
      log: SILENT_OPS_LOG,
      servedModels: ['llama-3-8b'],
      epochMs: Date.now,
    });
    writeFileSync(path, policyText(n, `prod@${2 * r + 3}`));
    offLoop.push(
      await stall(async () => {
        const o = await reloader.reload('admin');
        if (o.result !== 'applied') throw new Error(`reload ${o.result}: ${o.message}`);
      }),
    );
  }
  const text = readFileSync(path, 'utf8');
  const parseRounds = (fn: () => unknown) =>
    median(
      Array.from({ length: Math.min(ROUNDS, 3) }, () => {
        const start = performance.now();
        fn();
        return performance.now() - start;
      }),
    );
  const yamlOwn = parseRounds(() => parse(text));
  const onePass = parseRounds(() => parsePolicyText(text));
  const ms = (x: number) => x.toFixed(1);
  rows.push([
    n.toLocaleString('en'),
    (text.length / 1024).toFixed(0),
    scanned.toFixed(2),
    byDigest.toFixed(2),
    `${ms(median(onLoop.map((x) => x.stallMs)))} / ${ms(median(offLoop.map((x) => x.stallMs)))}`,
    `${ms(median(onLoop.map((x) => x.tookMs)))} / ${ms(median(offLoop.map((x) => x.tookMs)))}`,
    `${ms(yamlOwn)} / ${ms(onePass)}`,
  ]);
}
console.log(`${cpus()[0]?.model ?? 'cpu'}, ${cpus().length} CPUs; ${ROUNDS} rounds\n`);
console.log(
  '| tenants | file KiB | key check µs: every digest | by digest | loop stall ms: on the loop / gateway reload | reload ms: on the loop / gateway | YAML parse ms: own check / one pass |',
);
console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
