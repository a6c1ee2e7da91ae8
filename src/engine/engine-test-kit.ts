/**
 * Helpers for the engine's tests (not a test file itself): tiny inline timing profiles, a
 * listener that records events as lines, a synchronous fake-step loop with arrivals, and an
 * audit of every KV invariant that tests call after each step.
 */
import assert from 'node:assert/strict';
import type { Ms } from '../core/request/units.ts';
import type { EngineConfig, EngineListener, EngineRequest } from './engine-types.ts';
import { GPUS, MODELS } from './hardware.ts';
import type { ReplicaCore } from './replica.ts';
import { SeqState } from './sequence.ts';
import type { StepShape, TimingProfile } from './timing/profile.ts';
import type { StepEnds } from './token-runs.ts';

export function constProfile(stepMs: Ms): TimingProfile {
  return { name: `const:step_ms=${stepMs}`, stepMs: () => stepMs };
}

/** A fixed step time that records the shape of every step it is asked about. */
export function recordingProfile(stepMs: Ms, into: StepShape[]): TimingProfile {
  return { name: 'recording', stepMs: (s) => (into.push({ ...s }), stepMs) };
}

/** base + perPrefillToken · prefill tokens: a step's cost grows with its prompt work only. */
export function linearProfile(baseMs: Ms, perPrefillTokenMs: Ms): TimingProfile {
  return {
    name: `linear:${baseMs}+${perPrefillTokenMs}/tok`,
    stepMs: (s: StepShape) => baseMs + perPrefillTokenMs * s.prefillTokens,
  };
}

export function testConfig(over: Partial<EngineConfig> = {}): EngineConfig {
  return {
    model: MODELS['llama-3-8b'],
    gpu: GPUS.h100,
    tp: 1,
    maxModelLen: 8192,
    maxNumSeqs: 8,
    maxBatchedTokens: 64,
    chunkedPrefill: true,
    schedulerSteps: 1,
    blockSize: 16,
    gpuMemoryUtilization: 0.9,
    preemption: 'recompute',
    enablePrefixCaching: false,
    numGpuBlocks: 1000,
    numCpuBlocks: 1000,
    ...over,
  };
}

export function req(
  id: string,
  inputTokens: number,
  outputTokens: number,
  hashes?: string[],
  blockTokens = 16,
): EngineRequest {
  return hashes === undefined
    ? { id, inputTokens, outputTokens }
    : { id, inputTokens, outputTokens, prefix: { blockTokens, hashes } };
}

/** Records every event as one line, e.g. `20 token a 3`. */
export class Recorder implements EngineListener<EngineRequest> {
  readonly lines: string[] = [];
  private readonly byId = new Map<string, string[]>();
  private push(id: string, line: string): void {
    this.lines.push(line);
    const own = this.byId.get(id);
    if (own === undefined) this.byId.set(id, [line]);
    else own.push(line);
  }
  onPrefillStart(r: EngineRequest, at: Ms): void {
    this.push(r.id, `${at} prefill ${r.id}`);
  }
  onFirstToken(r: EngineRequest, at: Ms, stepStart: Ms, cached: number): void {
    this.push(r.id, `${at} first ${r.id} from=${stepStart} cached=${cached}`);
  }
  onToken(r: EngineRequest, at: Ms, index: number): void {
    this.push(r.id, `${at} token ${r.id} ${index}`);
  }
  onFinish(r: EngineRequest, at: Ms): void {
    this.push(r.id, `${at} finish ${r.id}`);
  }
  onPreempt(r: EngineRequest, at: Ms, mode: string): void {
    this.push(r.id, `${at} preempt ${r.id} ${mode}`);
  }
  onFail(r: EngineRequest, at: Ms, reason: string): void {
    this.push(r.id, `${at} fail ${r.id} ${reason}`);
  }
  of(id: string): string[] {
    return this.byId.get(id) ?? [];
  }
}

/**
 * A `Recorder` that takes decode tokens in runs (token-runs.ts), as the simulator does, and
 * records each run's tokens as the lines one report per token gives.
 */
export class RunRecorder extends Recorder {
  private readonly next = new Map<string, number>();
  override onFirstToken(r: EngineRequest, at: Ms, stepStart: Ms, cached: number): void {
    this.next.set(r.id, 1);
    super.onFirstToken(r, at, stepStart, cached);
  }
  override onToken(r: EngineRequest, at: Ms, index: number): void {
    this.next.set(r.id, index + 1);
    super.onToken(r, at, index);
  }
  onTokenRun(r: EngineRequest, steps: StepEnds, from: number, to: number): void {
    for (let step = from + 1; step <= to; step++) {
      this.onToken(r, steps.endMs(step), this.next.get(r.id) ?? 0);
    }
  }
  onStepTokens(): void {}
}

export interface Arrival {
  readonly atMs: Ms;
  readonly req: EngineRequest;
}

/**
 * Drives the core synchronously: adds arrivals due before each step, jumps idle gaps, and calls
 * `afterStep` (e.g. an audit) after every step. Returns the end time.
 */
export function runLoop(
  core: ReplicaCore<EngineRequest>,
  arrivals: readonly Arrival[] = [],
  afterStep: (now: Ms) => void = () => {},
  fromMs: Ms = 0,
): Ms {
  let now = fromMs;
  let next = 0;
  for (let step = 0; step < 1_000_000; step++) {
    while (next < arrivals.length && arrivals[next].atMs <= now)
      core.add(arrivals[next++].req, now);
    const d = core.startStep(now);
    if (d === null) {
      if (next >= arrivals.length) return now;
      now = arrivals[next].atMs;
      continue;
    }
    now += d;
    core.finishStep(now);
    afterStep(now);
  }
  throw new Error('runLoop: too many steps');
}

/**
 * Drives the core through timed arrivals and cancels, between steps, resuming each paused
 * sequence when its tool call returns, and audits the KV books after every step. `cancelled`
 * hears each cancel that found its request. Returns the end time.
 */
export function driveTimed(
  core: ReplicaCore<EngineRequest>,
  arrivals: readonly Arrival[],
  cancels: readonly { readonly atMs: Ms; readonly id: string }[] = [],
  cancelled: (id: string, atMs: Ms) => void = () => {},
): Ms {
  const timed: { atMs: Ms; run: (now: Ms) => void }[] = [
    ...arrivals.map((a) => ({ atMs: a.atMs, run: (now: Ms) => void core.add(a.req, now) })),
    ...cancels.map((c) => ({
      atMs: c.atMs,
      run: (now: Ms) => {
        if (core.cancel(c.id, now)) cancelled(c.id, now);
      },
    })),
  ];
  let now = 0;
  for (let i = 0; i < 1_000_000; i++) {
    timed.sort((a, b) => a.atMs - b.atMs);
    while (timed.length > 0 && timed[0].atMs <= now) timed.shift()?.run(now);
    const d = core.startStep(now);
    if (d === null) {
      if (timed.length === 0) return now;
      now = Math.max(now, timed[0].atMs);
      continue;
    }
    now += d;
    core.finishStep(now);
    auditKv(core);
    for (const p of core.takePauses()) {
      timed.push({ atMs: p.atMs, run: (t) => void core.resume(p.id, t) });
    }
  }
  throw new Error('driveTimed: too many steps');
}

/** Checks the KV bookkeeping against the sequences that hold it; throws on the first mismatch. */
export function auditKv(core: ReplicaCore<EngineRequest>): void {
  const { pool, cache } = core.kv;
  const sch = core.scheduler;
  let privateBlocks = 0;
  const refs = new Map<object, number>();
  const batch = sch.batch();
  for (const s of batch) {
    if (s.state !== SeqState.Running) continue;
    const need = Math.ceil((s.computed + s.sched) / core.config.blockSize);
    if (s.blocks < need) throw new Error(`audit: ${s.req.id} holds ${s.blocks} < ${need} blocks`);
    privateBlocks += s.blocks - s.sharedBlocks;
    let sharedSum = 0;
    for (const e of s.shared ?? []) {
      refs.set(e, (refs.get(e) ?? 0) + 1);
      sharedSum += e.blocks;
    }
    if (sharedSum !== s.sharedBlocks) throw new Error(`audit: ${s.req.id} shared blocks mismatch`);
  }
  let referenced = 0;
  let idle = 0;
  for (const e of cache?.entries() ?? []) {
    if ((refs.get(e) ?? 0) !== e.refs)
      throw new Error(`audit: entry ${e.hash} refs ${e.refs} ≠ holders`);
    if (e.refs > 0) referenced += e.blocks;
    else idle += e.blocks;
  }
  if (pool.usedBlocks !== privateBlocks + referenced) {
    throw new Error(
      `audit: used ${pool.usedBlocks} ≠ private ${privateBlocks} + shared ${referenced}`,
    );
  }
  if (pool.cachedBlocks !== idle)
    throw new Error(`audit: cached ${pool.cachedBlocks} ≠ idle entries ${idle}`);
  if (pool.usedBlocks + pool.cachedBlocks > pool.totalBlocks)
    throw new Error('audit: over capacity');
  // Seats are for scheduled sequences: those paused for a tool with their KV, or held, give theirs.
  let idleSeqs = 0;
  for (const s of batch) {
    if (s.state === SeqState.Running && (s.paused || s.held)) idleSeqs++;
  }
  if (idleSeqs !== sch.numIdle) {
    throw new Error(`audit: ${idleSeqs} idle in the batch ≠ ${sch.numIdle}`);
  }
  if (batch.length - idleSeqs > core.config.maxNumSeqs) {
    throw new Error('audit: over maxNumSeqs');
  }
  let host = 0;
  // Waiting swapped sequences, and those paused for a tool call with their KV on the host.
  for (const s of core.sequences()) {
    if (s.state === SeqState.Swapped) host += s.hostBlocks;
  }
  if (host !== core.kv.hostUsedBlocks)
    throw new Error(`audit: host ${core.kv.hostUsedBlocks} ≠ ${host}`);
  auditLiveWork(core);
}

/**
 * Checks what the live sequences hold still to do, as the core sums it when they come and go,
 * against a walk of them; between steps or from a listener mid-step.
 */
export function auditLiveWork(core: ReplicaCore<EngineRequest>): void {
  const walked = { seqs: 0, outputTokens: 0, contextTokens: 0 };
  for (const s of core.sequences()) {
    walked.seqs++;
    walked.outputTokens += s.output - s.emitted;
    walked.contextTokens += s.input + s.toolTokens + s.emitted;
  }
  const live = core.liveWork();
  if (JSON.stringify(live) !== JSON.stringify(walked)) {
    throw new Error(`audit: live work ${JSON.stringify(live)} ≠ walked ${JSON.stringify(walked)}`);
  }
}

/** Asserts `id` emitted tokens 0..output−1 once each, in order, then finished once. */
export function assertTokensInOrder(rec: Recorder, id: string, output: number): void {
  const lines = rec.of(id);
  const idx: number[] = [];
  for (const l of lines) {
    const p = l.split(' ');
    if (p[1] === 'first') idx.push(0);
    else if (p[1] === 'token') idx.push(Number(p[3]));
  }
  assert.deepEqual(
    idx,
    Array.from({ length: output }, (_, i) => i),
    `${id}: ${lines.join(' | ')}`,
  );
  assert.equal(lines.filter((l) => l.includes(' finish ')).length, 1, id);
  assert.ok(lines.at(-1)?.includes(' finish '), id);
}
