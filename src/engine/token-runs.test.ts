// Decode tokens in runs (token-runs.ts) tell a listener exactly what one report per token does:
// the same replica driven twice on the same random workload — preemptions by recompute and by
// swap, tool pauses that keep, swap or drop their KV, priority holds, a decode budget, cancels
// in mid-stream, outputs longer than the ring of step ends — gives every request the same
// events, tokens at the same times, in the same order relative to its other events; and the
// per-step counts add up to the tokens the runs carried. A replica reporting runs advances its
// decoding head in one stroke (steady-decodes.ts): the same holds, with prefix caching evicting
// under it and a listener cancelling another request from inside a step, and both replicas'
// counters agree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Ms } from '../core/request/units.ts';
import { SeededRng } from '../runtime/seeded-rng.ts';
import type { EngineConfig, EngineListener, EngineRequest } from './engine-types.ts';
import { auditLiveWork, driveTimed, testConfig } from './engine-test-kit.ts';
import type { TimingProfile } from './timing/profile.ts';
import { ReplicaCore } from './replica.ts';
import type { StepEnds } from './token-runs.ts';
import { steadyAllowed } from './steady-decodes.ts';

/** Each request's events as lines, every token `at token` however it was reported. */
class Lines implements EngineListener<EngineRequest> {
  readonly byId = new Map<string, string[]>();
  /** What the replica's sequences held at each finish, read from inside the step. */
  readonly reads: string[] = [];
  /** Called at each finish: a listener acting on the replica from inside a step. */
  finished: (id: string, at: Ms) => void = () => {};
  /** Tokens the runs carried, and those the per-step counts announced. */
  runTokens = 0;
  stepTokens = 0;
  private push(id: string, line: string): void {
    const own = this.byId.get(id);
    if (own === undefined) this.byId.set(id, [line]);
    else own.push(line);
  }
  onPrefillStart(r: EngineRequest, at: Ms): void {
    this.push(r.id, `${at} prefill`);
  }
  onFirstToken(r: EngineRequest, at: Ms, from: Ms, cached: number): void {
    this.push(r.id, `${at} first from=${from} cached=${cached}`);
  }
  onToken(r: EngineRequest, at: Ms): void {
    this.push(r.id, `${at} token`);
  }
  onFinish(r: EngineRequest, at: Ms): void {
    this.push(r.id, `${at} finish`);
    this.finished(r.id, at);
  }
  onPreempt(r: EngineRequest, at: Ms, mode: string): void {
    this.push(r.id, `${at} preempt ${mode}`);
  }
  onPause(r: EngineRequest, at: Ms, kv: string): void {
    this.push(r.id, `${at} pause ${kv}`);
  }
  onResume(r: EngineRequest, at: Ms): void {
    this.push(r.id, `${at} resume`);
  }
  onFail(r: EngineRequest, at: Ms, reason: string): void {
    this.push(r.id, `${at} fail ${reason}`);
  }
  cancelled(id: string, at: Ms): void {
    this.push(id, `${at} cancelled`);
  }
}

/** The same, taking decode tokens in runs; checks each run starts where the request's last token was. */
class RunLines extends Lines {
  private readonly last = new Map<string, Ms>();
  override onFirstToken(r: EngineRequest, at: Ms, from: Ms, cached: number): void {
    this.last.set(r.id, at);
    super.onFirstToken(r, at, from, cached);
  }
  override onToken(r: EngineRequest, at: Ms): void {
    this.last.set(r.id, at);
    super.onToken(r, at);
  }
  onTokenRun(r: EngineRequest, steps: StepEnds, from: number, to: number): void {
    assert.ok(to > from, `${r.id}: an empty run`);
    assert.equal(steps.endMs(from), this.last.get(r.id), `${r.id}: a run not after its last token`);
    for (let step = from + 1; step <= to; step++) super.onToken(r, steps.endMs(step));
    this.last.set(r.id, steps.endMs(to));
    this.runTokens += to - from;
  }
  onStepTokens(gapMs: Ms, count: number): void {
    assert.ok(gapMs > 0);
    this.stepTokens += count;
    this.steadyMost = Math.max(this.steadyMost, this.core?.scheduler.steady?.size ?? 0);
  }
  /** The largest steady head seen at a step's end. */
  steadyMost = 0;
  core: ReplicaCore<EngineRequest> | undefined;
}

interface Workload {
  readonly arrivals: { atMs: Ms; req: EngineRequest }[];
  readonly cancels: { atMs: Ms; id: string }[];
}

function workload(seed: number, tools: boolean, prefixes: boolean): Workload {
  const rng = new SeededRng(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rng.next() * (hi - lo + 1));
  const arrivals: Workload['arrivals'] = [];
  const cancels: Workload['cancels'] = [];
  let at = 0;
  for (let i = 0; i < 40; i++) {
    at += int(0, 400);
    const id = `r${i}`;
    // One in eight outruns the ring of step ends (1,024).
    const outputTokens = i % 8 === 3 ? int(1_100, 2_500) : int(1, 300);
    const req: EngineRequest = {
      id,
      inputTokens: int(10, 400),
      outputTokens,
      priority: int(0, 2),
      ...(prefixes
        ? {
            prefix: {
              blockTokens: 16,
              hashes: Array.from({ length: 25 }, (_, j) => `f${i % 3}-${j < 5 ? 0 : i}-${j}`),
            },
          }
        : {}),
      ...(tools && i % 3 === 0 && outputTokens > 10
        ? {
            toolCalls: [
              {
                afterTokens: int(1, outputTokens - 1),
                waitMs: int(5, 300),
                resultTokens: int(5, 80),
              },
            ],
          }
        : {}),
    };
    arrivals.push({ atMs: at, req });
    if (i % 7 === 5) cancels.push({ atMs: at + int(50, 4_000), id });
  }
  return { arrivals, cancels };
}

interface Case {
  name: string;
  config: Partial<EngineConfig>;
  tools: boolean;
  prefixes?: boolean;
  /** On each finish of r<i>, cancel r<i+1> and r<i−2>: cancels from inside the step. */
  finishCancels?: boolean;
}

const CASES: Case[] = [
  {
    name: 'recompute preemptions',
    config: { numGpuBlocks: 120, preemption: 'recompute' },
    tools: false,
  },
  {
    name: 'swap preemptions',
    config: { numGpuBlocks: 120, preemption: 'swap' },
    tools: false,
  },
  { name: 'tool pauses (auto)', config: { numGpuBlocks: 200 }, tools: true },
  {
    name: 'tool pauses kept',
    config: { numGpuBlocks: 400, toolKv: 'keep' },
    tools: true,
  },
  {
    name: 'tool pauses dropped',
    config: { numGpuBlocks: 200, toolKv: 'drop' },
    tools: true,
  },
  {
    name: 'prefix caching evicting, a wide batch',
    config: { numGpuBlocks: 400, enablePrefixCaching: true, maxNumSeqs: 32 },
    tools: false,
    prefixes: true,
  },
  {
    name: 'cancels from inside a step',
    config: { numGpuBlocks: 300, maxNumSeqs: 16 },
    tools: true,
    finishCancels: true,
  },
  {
    name: 'priority holds and a decode budget',
    config: {
      numGpuBlocks: 300,
      schedulingPolicy: 'priority',
      maxNumSeqs: 4,
      decodeTokenBudget: 3,
    },
    tools: false,
  },
];

for (const c of CASES) {
  test(`token runs: every request's events as one report per token gives them (${c.name})`, () => {
    for (const seed of [1, 2, 3]) {
      const config = testConfig({ ...c.config, maxBatchedTokens: 128 });
      // Every quantity of the step's shape prices it, so a shape planned wrong shows in the times.
      const profile: TimingProfile = {
        name: 'shape-priced',
        stepMs: (p) =>
          5 +
          0.01 * p.prefillTokens +
          1e-5 * p.prefillAttnWork +
          0.03 * p.decodeSeqs +
          1e-4 * p.decodeContextTokens,
      };
      const w = workload(seed, c.tools, c.prefixes === true);
      const drive = (lines: Lines): ReplicaCore<EngineRequest> => {
        const core = new ReplicaCore(config, profile, lines);
        lines.finished = (id, at) => {
          // What a reader inside the step sees (the simulator's outstanding work).
          const held = [...core.sequences()].map(
            (s) => `${s.req.id}:${s.emitted}/${s.computed}/${s.blocks}`,
          );
          lines.reads.push(`${at} ${id}: ${held.sort().join(' ')}`);
          // And the live work the core sums as sequences come and go agrees with them.
          auditLiveWork(core);
        };
        if (c.finishCancels === true) {
          const read = lines.finished;
          lines.finished = (id, at) => {
            read(id, at);
            // One admitted after it (not yet through this step) and one before it (through it).
            for (const d of [1, -2]) {
              const other = `r${Number(id.slice(1)) + d}`;
              if (core.cancel(other, at)) lines.cancelled(other, at);
            }
            auditLiveWork(core);
          };
        }
        if (lines instanceof RunLines) lines.core = core;
        driveTimed(core, w.arrivals, w.cancels, (id, at) => lines.cancelled(id, at));
        return core;
      };
      const each = new Lines();
      const eachCore = drive(each);
      const runs = new RunLines();
      const runsCore = drive(runs);
      assert.deepEqual(runs.byId, each.byId, `seed ${seed}`);
      assert.deepEqual(runsCore.stats(), eachCore.stats(), `seed ${seed}: counters`);
      assert.deepEqual(runs.reads, each.reads, `seed ${seed}: reads from inside a step`);
      assert.ok(runs.runTokens > 0, 'some tokens came in runs');
      assert.equal(runs.stepTokens, runs.runTokens, 'the per-step counts add up to the runs');
      if (steadyAllowed(config)) assert.ok(runs.steadyMost > 1, `seed ${seed}: a steady head`);
      else assert.equal(runs.steadyMost, 0);
    }
  });
}
