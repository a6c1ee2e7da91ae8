// How long one placement takes on a large fleet: 64 replicas of llama-3.1-8b on H100, each with
// a prefix index as large as its KV cache holds (the approximate mode's bound, ≈30,000 16-token
// blocks), 48 requests in flight per replica in the ledger, and prompts of 2,000–12,000 tokens
// that share a system prompt and, half the time, one of 256 documents some replicas hold. A
// decision is what the dispatcher does per request under flow control: the prefix match over the
// fleet, the strategy's filters (avoid, held, flow-fit), the router's scorers and its pick.
// Reports the median and p99 per decision by router, side by side in one run.
// Usage: node bench/route-pick.ts [--replicas 64] [--decisions 20000]
import { cpus } from 'node:os';
import { flag } from './bench-args.ts';
import { SeededRng } from '../src/runtime/seeded-rng.ts';
import type { FleetSpec } from '../src/core/fleet/fleet-spec.ts';
import { ReplicaLedger } from '../src/core/fleet/replica-ledger.ts';
import type { ReplicaSnapshot } from '../src/core/fleet/replica-snapshot.ts';
import { dispatchStrategy } from '../src/core/dispatch/strategies.ts';
import { resolveDispatch } from '../src/core/config/stage-schema.ts';
import { ROUTERS } from '../src/core/routing/registry.ts';
import { Router } from '../src/core/routing/router.ts';
import type { RouteContext, RouteRequest } from '../src/core/routing/route.ts';
import type { LlmRequest } from '../src/core/request/request.ts';
import { DEFAULT_SLO_CLASSES } from '../src/core/request/slo-classes.ts';
import { percentileSorted } from '../src/core/stats/percentile.ts';
import { buildEngineConfig, buildEngineProfile } from '../src/engine/engine-spec.ts';
import { ENGINE_DEFAULTS } from '../src/engine/engine-spec.ts';
import { fleetSpecFor } from '../src/gateway/fleet-spec-for.ts';
import { DEFAULT_SHED_GAP_RATIO } from '../src/core/config/resilience-schema.ts';

const replicas = Number(flag('--replicas') ?? 64);
const decisions = Number(flag('--decisions') ?? 20_000);
const BLOCK = 16;

const engineSpec = { ...ENGINE_DEFAULTS, model: 'llama-3.1-8b', gpu: 'h100' };
const engine = buildEngineConfig(engineSpec);
const spec: FleetSpec = fleetSpecFor(engine, buildEngineProfile(engineSpec), engine.model.name);
const rng = new SeededRng(11);
const hashes = (family: string, n: number) => Array.from({ length: n }, (_, i) => `${family}.${i}`);
const system = hashes('system', 64);
const docs = Array.from({ length: 256 }, (_, d) => hashes(`doc${d}`, 400));

/** A prompt: the system prompt, maybe a document, then tokens of its own. */
function request(k: number): RouteRequest {
  const own = 60 + Math.floor(rng.next() * 300);
  const doc = rng.next() < 0.5 ? docs[Math.floor(rng.next() * docs.length)] : [];
  const blocks = [...system, ...doc, ...hashes(`own${k}`, own)];
  const req: LlmRequest = {
    id: `r${k}`,
    arrivalMs: 0,
    inputTokens: blocks.length * BLOCK + 7,
    outputTokens: 200,
    tenant: 't',
    sloClass: 'interactive',
    prefix: { blockTokens: BLOCK, hashes: blocks },
  };
  return {
    req,
    demand: {
      kvTokens: req.inputTokens + 400,
      prefixHitTokens: 0,
      output: { p10: 20, p50: 150, p90: 400, source: 'class' },
    },
    cls: DEFAULT_SLO_CLASSES.interactive,
  };
}

function setup(type: string) {
  const strategy = dispatchStrategy(
    resolveDispatch({ type: 'flow-control' }, DEFAULT_SHED_GAP_RATIO, 'goodput'),
    spec,
  );
  const router = new Router(ROUTERS[type], {
    leading: strategy.filters,
    prefix: { mode: 'approximate', capacityTokens: spec.replicaKvTokens },
  });
  const ledger = new ReplicaLedger(replicas);
  const fleet: ReplicaSnapshot[] = [];
  for (let i = 0; i < replicas; i++) {
    for (let k = 0; k < 48; k++) {
      const e = {
        replica: i,
        promptTokens: 3_000,
        kvTokens: 3_400,
        seqs: 1,
        itlSloMs: 80,
        lengths: undefined,
        capTokens: 2_000,
        expectTokens: 150,
        streamed: 0,
        slowGaps: 0,
        lateGaps: 0,
        spanFromMs: 0,
        spanFromToken: 0,
        spanProfileMs: 0,
        slot: -1,
      };
      ledger.add(e);
      if (k < 44) ledger.firstToken(e, 0);
    }
    fleet.push({ index: i, inFlight: 48, running: 48, waiting: 0, kvUsage: 0.4 });
    // Its cache, as the index sees it: documents served there, then many prompts of their own.
    if (router.prefix !== null) {
      for (let d = i; d < docs.length; d += replicas) {
        router.prefix.served(i, { blockTokens: BLOCK, hashes: [...system, ...docs[d]] }, 1e9);
      }
      for (let k = 0; router.prefix.blocksOf(i) < spec.replicaKvTokens / BLOCK - 400; k++) {
        router.prefix.served(i, { blockTokens: BLOCK, hashes: hashes(`fill${i}.${k}`, 400) }, 1e9);
      }
    }
  }
  const ctx: RouteContext = {
    nowMs: 0,
    spec,
    ledger,
    flow: strategy.flow,
    hits: new Float64Array(0),
    heldFor: () => undefined,
    cachedBlocks: (i) => router.prefix?.blocksOf(i) ?? 0,
  };
  return { router, fleet, ctx };
}

console.log(`machine: ${cpus()[0]?.model} × ${cpus().length}, node ${process.version}`);
console.log(
  `${replicas} replicas, ${spec.replicaKvTokens.toLocaleString()} KV tokens each, ${decisions.toLocaleString()} decisions\n`,
);
console.log('| router | index blocks (all replicas) | median µs | p99 µs |');
console.log('| --- | ---: | ---: | ---: |');
const requests = Array.from({ length: decisions }, (_, k) => request(k));
for (const type of [
  'round-robin',
  'least-request',
  'llm-d-like',
  'sglang-cache-aware',
  'expected-completion',
]) {
  const { router, fleet, ctx } = setup(type);
  const times = new Float64Array(decisions);
  let sink = 0;
  for (let k = 0; k < decisions; k++) {
    const r = requests[k];
    const t0 = performance.now();
    router.prepare(r.req, fleet, ctx);
    const pool = router.eligible(r, fleet, ctx);
    if (pool.length > 0) sink += router.pick(r, pool, ctx).index;
    times[k] = (performance.now() - t0) * 1000;
  }
  times.sort();
  let blocks = 0;
  for (let i = 0; i < replicas; i++) blocks += router.prefix?.blocksOf(i) ?? 0;
  console.log(
    `| ${type} | ${blocks.toLocaleString()} | ${percentileSorted(times, 50).toFixed(1)} | ${percentileSorted(times, 99).toFixed(1)} |${sink < 0 ? ' ' : ''}`,
  );
}
