// LoRA adapters in the engine: at most max_loras distinct adapters in a step's batch (a request
// of another adapter waits, the next may go), and bringing an adapter into a GPU slot costs its
// load time in the step that first runs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineRequest } from './engine-types.ts';
import { Recorder, auditKv, constProfile, runLoop, testConfig } from './engine-test-kit.ts';
import { ReplicaCore } from './replica.ts';

const lora = (id: string, adapter: string | undefined, output = 4): EngineRequest => ({
  id,
  inputTokens: 16,
  outputTokens: output,
  adapter,
});

function replica(maxLoras: number, loraModules = ['a', 'b', 'c']) {
  const rec = new Recorder();
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ loraModules, maxLoras, loraLoadMs: 50 }),
    constProfile(10),
    rec,
  );
  return { rec, core };
}

/** When each request's first token came (ms). */
function firstTokens(rec: Recorder, ids: string[]): number[] {
  return ids.map((id) =>
    Number(
      rec
        .of(id)
        .find((l) => l.includes(' first '))
        ?.split(' ')[0],
    ),
  );
}

test('a batch holds at most max_loras adapters: another adapter waits, the base model does not', () => {
  const { rec, core } = replica(1);
  for (const r of [lora('a1', 'a', 6), lora('b1', 'b'), lora('a2', 'a'), lora('base', undefined)]) {
    core.add(r, 0);
  }
  const adaptersPerStep: number[] = [];
  runLoop(core, [], () => {
    auditKv(core);
    adaptersPerStep.push([...(core.loraInfo()?.running ?? [])].length);
  });
  const [a1, b1, a2, base] = firstTokens(rec, ['a1', 'b1', 'a2', 'base']);
  // a1 and a2 share the first step (adapter a loaded: 10 + 50 ms); the base-model request joins
  // them; b1 waits until no request of a runs, then pays its own load.
  assert.equal(a1, 60);
  assert.equal(a2, 60);
  assert.equal(base, 60);
  assert.ok(b1 > 60 + 5 * 10, `b1 first token at ${b1}`);
  assert.ok(adaptersPerStep.every((n) => n <= 1));
});

test('with two slots both adapters run together, and a resident adapter loads no more', () => {
  const { rec, core } = replica(2);
  core.add(lora('a1', 'a'), 0);
  core.add(lora('b1', 'b'), 0);
  runLoop(core, [{ atMs: 500, req: lora('a2', 'a') }], () => auditKv(core));
  const [a1, b1, a2] = firstTokens(rec, ['a1', 'b1', 'a2']);
  assert.equal(a1, 110, 'two loads in the first step');
  assert.equal(b1, 110);
  assert.equal(a2, 510, 'a is still resident');
  assert.deepEqual(core.load().loras, ['b', 'a'], 'both held in their slots');
  // vLLM's gauge counts by request: with none running, it names none.
  assert.deepEqual(core.loraInfo(), { running: [], waiting: [], maxLoras: 2 });
});

test('without LoRA modules, adapters are not the engine’s concern', () => {
  const { rec, core } = replica(1, []);
  core.add(lora('a1', 'a'), 0);
  core.add(lora('b1', 'b'), 0);
  runLoop(core);
  assert.deepEqual(firstTokens(rec, ['a1', 'b1']), [10, 10]);
  assert.equal(core.loraInfo(), null);
});
