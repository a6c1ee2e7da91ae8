// What one replica's step costs on its own: a ReplicaCore holding a steady batch of decoding
// sequences (a new one added as each finishes), stepped on a constant profile with a listener
// that does nothing — the engine's own work per step and per token, without the simulator
// around it. `--thrash-kb K` touches K KiB of other memory between steps (not timed), as the
// rest of a simulation does between one replica's steps, to show how much of a step is memory
// traffic. Then the step time alone: the default profile (llama-3-8b/h100, vllm-v1) asked about
// a decode batch whose size and context drift as a replica's do, a prompt chunk every 16th step.
// Usage: node bench/engine-step.ts [--steps 200000] [--batch 29] [--thrash-kb 0,2048,8192]
import type { EngineListener, EngineRequest } from '../src/engine/engine-types.ts';
import { constProfile, testConfig } from '../src/engine/engine-test-kit.ts';
import { ReplicaCore } from '../src/engine/replica.ts';
import { buildEngineProfile } from '../src/engine/engine-spec.ts';
import { SCENARIO_DEFAULTS } from '../src/sim/scenario.ts';
import { emptyShape } from '../src/engine/timing/profile.ts';
import { flag } from './bench-args.ts';

const STEPS = Number(flag('--steps') ?? '200000');
const BATCH = Number(flag('--batch') ?? '29');
const THRASH_KB = (flag('--thrash-kb') ?? '0,512,2048,8192').split(',').map(Number);

const idle = (): void => {};
// The simulator's kind of listener: decode tokens in runs (token-runs.ts).
const listener: EngineListener<EngineRequest> = {
  onPrefillStart: idle,
  onFirstToken: idle,
  onToken: idle,
  onFinish: idle,
  onPreempt: idle,
  onFail: idle,
  onTokenRun: idle,
  onStepTokens: idle,
};

function run(thrashKb: number): number {
  const core = new ReplicaCore(
    testConfig({ maxNumSeqs: 256, maxBatchedTokens: 8192, numGpuBlocks: 100_000 }),
    constProfile(10),
    listener,
  );
  const junk = new Float64Array(thrashKb * 128);
  let next = 0;
  let now = 0;
  let busy = 0;
  let sink = 0;
  for (let step = 0; step < STEPS; step++) {
    const t0 = performance.now();
    while (core.scheduler.numRunning + core.scheduler.numWaiting < BATCH) {
      core.add({ id: `r${next++}`, inputTokens: 100, outputTokens: 400 }, now);
    }
    now += core.startStep(now) ?? 0;
    core.finishStep(now);
    busy += performance.now() - t0;
    // One word in each cache line of `junk`, a different one each step.
    for (let i = step % 8; i < junk.length; i += 8) sink += junk[i]++;
  }
  if (sink < 0) throw new Error('unreachable');
  return busy;
}

console.log(`| memory touched between steps | ns a step | ns a token (batch ${BATCH}) |`);
console.log('|---:|---:|---:|');
run(0); // warm-up
for (const kb of THRASH_KB) {
  const ms = run(kb);
  const perStep = (ms * 1e6) / STEPS;
  console.log(`| ${kb} KiB | ${perStep.toFixed(0)} | ${(perStep / BATCH).toFixed(1)} |`);
}

/** ns per step-time evaluation, and the sum (the same sum shows the same answers). */
function stepTime(n: number): { ns: number; sum: number } {
  const profile = buildEngineProfile(SCENARIO_DEFAULTS);
  const shape = emptyShape();
  let sum = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    shape.decodeSeqs = 20 + ((i >> 6) % 20);
    shape.decodeContextTokens = shape.decodeSeqs * (2_400 + (i % 400));
    shape.prefillTokens = i % 16 === 0 ? 512 : 0;
    shape.prefillSeqs = shape.prefillTokens > 0 ? 1 : 0;
    shape.prefillAttnWork = shape.prefillTokens * shape.prefillTokens;
    sum += profile.stepMs(shape);
  }
  return { ns: ((performance.now() - t0) * 1e6) / n, sum };
}
stepTime(100_000); // warm-up
const t = stepTime(3_000_000);
console.log(
  `\nstep time (llama-3-8b/h100, vllm-v1): ${t.ns.toFixed(1)} ns a step (sum ${t.sum.toFixed(3)})`,
);
