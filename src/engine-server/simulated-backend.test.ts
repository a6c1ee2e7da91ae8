// The backend on a virtual clock: tokens arrive exactly when the engine emits them, cancels free
// KV in the same call, faults land where the plan says — all checked in virtual milliseconds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { constProfile, testConfig } from '../engine/engine-test-kit.ts';
import { SeededRng } from '../runtime/seeded-rng.ts';
import { VirtualClock } from '../runtime/virtual-clock.ts';
import type { Generation, GenerationEvent } from './generation.ts';
import { type FaultRates, NO_FAULTS, RequestPlanner } from './request-plan.ts';
import {
  type BackendObserver,
  type GenerationRequest,
  SimulatedBackend,
} from './simulated-backend.ts';

function backend(faults: Partial<FaultRates> = {}, natural = 3, maxNumSeqs = 8) {
  const time = new VirtualClock();
  const seen: string[] = [];
  const observer: BackendObserver = {
    firstToken: (ms) => seen.push(`ttft ${ms}`),
    tokenGap: (ms) => seen.push(`itl ${ms}`),
    ended: (reason, r) => seen.push(`${reason} ${r.e2eMs}`),
  };
  const b = new SimulatedBackend({
    config: testConfig({ maxNumSeqs }),
    profile: constProfile(10),
    clock: time,
    timers: time,
    rng: new SeededRng(1),
    faults: { ...NO_FAULTS, ...faults },
    lengths: () => natural,
    observer,
  });
  return { b, time, seen };
}

function accept(b: SimulatedBackend, req: Partial<GenerationRequest> = {}): Generation {
  const r = b.submit({ promptTokens: 20, ignoreEos: false, ...req });
  assert.ok(r.ok, `rejected: ${r.ok ? '' : r.reason}`);
  return r.generation;
}

/** Reads every event, letting virtual time run whenever the reader has to wait. */
async function drain(gen: Generation, time: VirtualClock): Promise<string[]> {
  const out: string[] = [];
  const it = gen[Symbol.asyncIterator]();
  for (;;) {
    const p = it.next();
    let settled = false;
    void p.then(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    if (!settled) time.run();
    const r = await p;
    if (r.done) return out;
    out.push(`${time.now()} ${describe(r.value)}`);
  }
}

function describe(ev: GenerationEvent): string {
  if (ev.type === 'token') return `token ${ev.index}@${ev.atMs}${ev.text}`;
  if (ev.type === 'finish') return `finish ${ev.reason} ${ev.completionTokens}@${ev.atMs}`;
  return `crash ${ev.completionTokens}@${ev.atMs}`;
}

test('tokens arrive at the engine step ends; ignore_eos runs to max_tokens', async () => {
  const { b, time, seen } = backend();
  const gen = accept(b, { maxTokens: 4, ignoreEos: true });
  time.run();
  assert.deepEqual(await drain(gen, time), [
    '40 token 0@10the',
    '40 token 1@20 quick',
    '40 token 2@30 model',
    '40 token 3@40 serves',
    '40 finish length 4@40',
  ]);
  assert.deepEqual(seen, ['ttft 10', 'itl 10', 'itl 10', 'itl 10', 'length 40']);
  assert.equal(b.load().kvUsedBlocks, 0);
  assert.deepEqual(b.counters(), { promptTokens: 20, ended: { stop: 0, length: 1, abort: 0 } });
});

test('the natural length ends a request with stop unless max_tokens comes first', async () => {
  const { b, time } = backend({}, 3);
  const natural = accept(b, { maxTokens: 10 });
  const capped = accept(b, { maxTokens: 2 });
  const unlimited = accept(b);
  time.run();
  assert.match((await drain(natural, time)).at(-1) ?? '', /finish stop 3/);
  assert.match((await drain(capped, time)).at(-1) ?? '', /finish length 2/);
  assert.match((await drain(unlimited, time)).at(-1) ?? '', /finish stop 3/);
});

test('cancel frees a running request at once and ends its stream without a finish', async () => {
  const { b, time, seen } = backend();
  const gen = accept(b, { maxTokens: 100, ignoreEos: true });
  time.run(35);
  assert.equal(b.load().running, 1);
  assert.ok(b.load().kvUsedBlocks > 0);
  gen.cancel();
  assert.equal(b.load().running, 0);
  assert.equal(b.load().kvUsedBlocks, 0);
  const events = await drain(gen, time);
  assert.equal(events.length, 3, 'the tokens emitted before the cancel');
  assert.equal(seen.at(-1), 'abort 35');
  assert.equal(b.counters().ended.abort, 1);
  assert.equal(b.inFlight, 0);
});

test('cancel removes a queued request before it ever runs', () => {
  const { b, time } = backend({}, 3, 1);
  accept(b, { maxTokens: 50, ignoreEos: true });
  const queued = accept(b, { maxTokens: 50, ignoreEos: true });
  time.run(15);
  assert.equal(b.load().waiting, 1);
  queued.cancel();
  assert.equal(b.load().waiting, 0);
  queued.cancel();
  assert.equal(b.counters().ended.abort, 1, 'cancel is idempotent');
});

test('a reader that stops early cancels the request', async () => {
  const { b, time } = backend();
  const gen = accept(b, { maxTokens: 100, ignoreEos: true });
  time.run(25);
  for await (const ev of gen) if (ev.type === 'token') break;
  assert.equal(b.load().running, 0);
  assert.equal(b.load().kvUsedBlocks, 0);
});

test('an injected crash cuts the stream half-way and frees the engine', async () => {
  const { b, time } = backend({ crashRate: 1 });
  const gen = accept(b, { maxTokens: 6, ignoreEos: true });
  time.run();
  const events = await drain(gen, time);
  assert.deepEqual(events.slice(-2), ['30 token 2@30 model', '30 crash 3@30']);
  assert.equal(b.load().kvUsedBlocks, 0);
  assert.equal(b.counters().ended.abort, 1);
});

test('an injected stall pauses delivery once, half-way, for stall_ms', async () => {
  const { b, time } = backend({ stallRate: 1, stallMs: 100 });
  const gen = accept(b, { maxTokens: 4, ignoreEos: true });
  time.run();
  assert.deepEqual(
    (await drain(gen, time)).map((e) => e.split(' ')[0]),
    ['40', '40', '140', '140', '140'],
  );
});

test('rejections: injected failure, a prompt past the context, an output limit past it', () => {
  const failing = backend({ failRate: 1 }).b;
  assert.deepEqual(failing.submit({ promptTokens: 20, ignoreEos: false }), {
    ok: false,
    reason: 'injected_failure',
  });
  assert.equal(failing.load().waiting, 0);
  const { b } = backend();
  const long = b.submit({ promptTokens: 8192, ignoreEos: false });
  assert.deepEqual(long, { ok: false, reason: 'prompt_exceeds_max_model_len' });
  const over = b.submit({ promptTokens: 100, maxTokens: 8093, ignoreEos: false });
  assert.deepEqual(over, { ok: false, reason: 'output_exceeds_max_model_len' });
  assert.ok(b.submit({ promptTokens: 100, maxTokens: 8092, ignoreEos: true }).ok);
});

test('a seed gives the same lengths whether faults are on or off', () => {
  const lengths = (faults: FaultRates) => {
    const planner = new RequestPlanner(new SeededRng(5), faults, (u) => 1 + Math.floor(u * 500));
    return Array.from(
      { length: 20 },
      () => planner.plan({ promptTokens: 10, ignoreEos: false, maxModelLen: 8192 }).outputTokens,
    );
  };
  const all = { failRate: 0.5, stallRate: 0.5, stallMs: 10, crashRate: 0.5 };
  assert.deepEqual(lengths(NO_FAULTS), lengths(all));
  assert.notDeepEqual(lengths(NO_FAULTS), new Array(20).fill(lengths(NO_FAULTS)[0]));
});

test('min_tokens holds the end of sequence back: the reply is at least that long, within the limit', () => {
  const plan = (minTokens: number | undefined, maxTokens?: number) =>
    new RequestPlanner(new SeededRng(5), NO_FAULTS, () => 3).plan({
      promptTokens: 10,
      ignoreEos: false,
      maxModelLen: 8192,
      maxTokens,
      minTokens,
    });
  assert.deepEqual([plan(undefined).outputTokens, plan(undefined).finishReason], [3, 'stop']);
  assert.deepEqual([plan(40).outputTokens, plan(40).finishReason], [40, 'stop']);
  assert.deepEqual([plan(2).outputTokens, plan(2).finishReason], [3, 'stop']);
  // At the limit it is the limit that ends it.
  assert.deepEqual([plan(40, 40).outputTokens, plan(40, 40).finishReason], [40, 'stop']);
  assert.deepEqual([plan(60, 50).outputTokens, plan(60, 50).finishReason], [50, 'length']);
});

test('close ends open streams without a finish and refuses new work', async () => {
  const { b, time } = backend();
  const gen = accept(b, { maxTokens: 100, ignoreEos: true });
  time.run(25);
  b.close();
  const events = await drain(gen, time);
  assert.ok(events.every((e) => !e.includes('finish')));
  assert.deepEqual(b.submit({ promptTokens: 5, ignoreEos: false }), {
    ok: false,
    reason: 'shutting_down',
  });
});
