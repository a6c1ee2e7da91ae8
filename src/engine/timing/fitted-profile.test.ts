// Fitted profiles: each committed profile reproduces the source rows it was fitted from (the
// recorded checks, within 10%), behaves like a step-time model (positive, non-decreasing in
// work), and the step formula adds its parts as documented. With the raw Vidur data present
// (../shared/data), more source rows are compared directly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FittedProfile } from './fitted-profile.ts';
import { PROFILE_SCHEMA, type FittedProfileData } from './profile-data.ts';
import { listProfiles, loadFittedProfile } from './profile-registry.ts';
import { emptyShape, type StepShape } from './profile.ts';
import { LAYER_OPS } from '../../../scripts/fit-profiles/op-table.ts';
import { buildEngineProfile, ENGINE_DEFAULTS } from '../engine-spec.ts';
import type { HostTimedProfile } from './host-overhead.ts';

const REQUIRED = [
  'llama-3-8b/a100/tp1',
  'llama-3-8b/h100/tp1',
  'llama-2-70b/h100/tp4',
  'llama-2-70b/h100/tp8',
];

const shape = (p: Partial<StepShape>): StepShape => ({ ...emptyShape(), ...p });
const prefill = (tokens: number, cached = 0) =>
  shape({ prefillTokens: tokens, prefillSeqs: 1, prefillAttnWork: tokens * (cached + tokens) });
const decode = (seqs: number, context: number) =>
  shape({ decodeSeqs: seqs, decodeContextTokens: seqs * context });

test('the required profiles are committed', () => {
  for (const name of REQUIRED) assert.ok(listProfiles().includes(name), name);
});

for (const name of listProfiles()) {
  const p = loadFittedProfile(name);

  test(`${name}: every check point is within 10% of its source row`, () => {
    assert.ok(p.data.checks.length >= 40, 'at least 40 checks');
    for (const c of p.data.checks) {
      const got = p.predictCheck(c);
      const err = Math.abs(got - c.expectedMs) / c.expectedMs;
      assert.ok(
        err <= 0.1,
        `${c.component} ${JSON.stringify(c.input)}: ${got} vs ${c.expectedMs} (${c.source})`,
      );
    }
  });

  test(`${name}: records its source, licence and method`, () => {
    assert.equal(p.data.source.licence, 'MIT');
    assert.match(String(p.data.source.commit), /^[0-9a-f]{40}$/);
    assert.ok((p.data.source.files as string[]).length >= 3);
    assert.match(p.data.method, /step_ms = /);
    assert.ok(Object.keys(p.data.fitError).length >= 3);
  });

  test(`${name}: step time is positive for any work and zero for none`, () => {
    assert.equal(p.stepMs(shape({})), 0);
    for (const s of [
      prefill(1),
      decode(1, 1),
      prefill(17, 4000),
      decode(300, 9000),
      prefill(20000),
    ]) {
      assert.ok(p.stepMs(s) > 0, JSON.stringify(s));
    }
    const mixed = shape({
      prefillTokens: 512,
      prefillSeqs: 2,
      prefillAttnWork: 2 * 256 * 1256,
      decodeSeqs: 40,
      decodeContextTokens: 40 * 700,
    });
    assert.ok(p.stepMs(mixed) > p.stepMs(decode(40, 700)));
  });

  test(`${name}: non-decreasing in prompt tokens, sequences and context`, () => {
    const series = (f: (i: number) => StepShape, from: number, to: number, step: number) => {
      let prev = 0;
      for (let i = from; i <= to; i += step) {
        const ms = p.stepMs(f(i));
        assert.ok(ms >= prev - 1e-9, `${i}: ${ms} < ${prev}`);
        prev = ms;
      }
    };
    series((t) => prefill(t), 1, 40000, 7);
    series((t) => prefill(t, 3000), 1, 8000, 13);
    series((d) => decode(d, 1024), 1, 1024, 1);
    series((k) => decode(16, k), 1, 16000, 11);
    series((k) => prefill(512, k), 0, 16000, 17);
  });
}

// A hand-checkable profile: every curve and grid is flat or linear, so the formula shows through.
function tinyProfile(tp: number): FittedProfileData {
  const flat = (y: number) => ({
    x: [1, 2],
    y: [y, y],
    tail: { kind: 'linear' as const, slope: 0 },
  });
  const grid = (v: number) => ({
    rows: [1, 2],
    cols: [0, 10],
    v: [
      [v, v],
      [v, v],
    ],
    rowTailExponent: 0,
  });
  return {
    schema: PROFILE_SCHEMA,
    name: 'tiny/a100/tp1',
    model: 'tiny',
    gpu: 'a100',
    tp,
    layers: 10,
    method: 'test',
    source: {},
    layerLinearMs: { x: [1, 101], y: [1, 2], tail: { kind: 'linear', slope: 0.01 } },
    embeddingMs: flat(0.5),
    lmHeadMs: flat(0.25),
    attention: {
      prefill: { grid: grid(0.1), scale: 1 },
      decode: { grid: grid(0.2), batchPerSeq: 1, scale: 1 },
    },
    allReduce: tp > 1 ? { bytesPerToken: 4, ms: flat(0.05) } : null,
    cpuOverhead: { fixedMs: 1, perSeqMs: 0.5 },
    fitError: {},
    checks: [],
  };
}

test('step = cpu + embedding + LM head + layers × (linear + prefill attn per chunk + decode attn + 2 all-reduces)', () => {
  const p = new FittedProfile(tinyProfile(1));
  // 100 prompt tokens in 2 chunks + 1 decode: T = 101 tokens, S = 3 sequences.
  const s = shape({
    prefillTokens: 100,
    prefillSeqs: 2,
    prefillAttnWork: 2 * 50 * 50,
    decodeSeqs: 1,
    decodeContextTokens: 9,
  });
  const expected = 1 + 0.5 * 3 + 0.5 + 0.25 + 10 * (2 + 2 * 0.1 + 0.2);
  assert.ok(Math.abs(p.stepMs(s) - expected) < 1e-9, `${p.stepMs(s)} vs ${expected}`);
  const tp2 = new FittedProfile(tinyProfile(2));
  assert.ok(Math.abs(tp2.stepMs(s) - (expected + 10 * 2 * 0.05)) < 1e-9);
});

test('attention scaling keeps the latency floor and scales the rest', () => {
  const d = tinyProfile(1);
  const data = {
    ...d,
    attention: {
      prefill: {
        grid: {
          rows: [1, 100],
          cols: [0, 1000],
          v: [
            [0.1, 0.2],
            [0.3, 0.5],
          ],
          rowTailExponent: 2,
        },
        scale: 0.5,
      },
      decode: {
        grid: {
          rows: [1, 8],
          cols: [0, 1000],
          v: [
            [0.1, 0.3],
            [0.2, 0.9],
          ],
          rowTailExponent: 1,
        },
        batchPerSeq: 2,
        scale: 2,
      },
    },
  };
  const p = new FittedProfile(data);
  assert.ok(Math.abs(p.attnPrefillMs(100, 1, 100 * 1100) - (0.1 + 0.5 * (0.5 - 0.1))) < 1e-12);
  // Two chunks of 100 with 1000 cached each: twice one chunk.
  assert.ok(Math.abs(p.attnPrefillMs(200, 2, 2 * 100 * 1100) - 2 * (0.1 + 0.5 * 0.4)) < 1e-12);
  // Past the last chunk row the grid grows as (chunk/100)^2.
  assert.ok(Math.abs(p.sourceAttnPrefillMs(200, 0) - 0.3 * 4) < 1e-12);
  // 4 sequences are looked up as batch 8; context 1000 each.
  assert.ok(Math.abs(p.attnDecodeMs(4, 4000) - (0.1 + 2 * (0.9 - 0.1))) < 1e-12);
});

// --- Against the raw data, where this machine has it -------------------------------------

const RAW = fileURLToPath(new URL('../../../../shared/data/profiles/vidur/', import.meta.url));
const noRaw = existsSync(RAW) ? false : 'raw Vidur data (../shared/data) not present';

function rows(file: string): Record<string, string>[] {
  const [head, ...lines] = readFileSync(RAW + file, 'utf8')
    .trim()
    .split('\n');
  const cols = head.split(',');
  return lines.map((l) => Object.fromEntries(l.split(',').map((v, i) => [cols[i], v])));
}
const med = (r: Record<string, string>, op: string) => Number(r[`time_stats.${op}.median`] || 0);
const HF: Record<string, string> = {
  'llama-3-8b': 'Meta-Llama-3-8B',
  'llama-3-70b': 'Meta-Llama-3-70B',
  'llama-2-7b': 'Llama-2-7b-hf',
  'llama-2-70b': 'Llama-2-70b-hf',
};

function errors(pairs: [number, number][]): { mape: number; over10: number } {
  const e = pairs.map(([got, want]) => Math.abs(got - want) / want);
  return {
    mape: e.reduce((s, v) => s + v, 0) / e.length,
    over10: e.filter((v) => v > 0.1).length / e.length,
  };
}

test('measured profiles follow every mlp.csv row at their TP', { skip: noRaw }, () => {
  for (const name of listProfiles()) {
    const p = loadFittedProfile(name);
    const file = `compute/${p.data.gpu}/meta-llama/${HF[p.data.model]}/mlp.csv`;
    if (!existsSync(RAW + file)) continue; // derived (no Llama-3 H100 data): covered by its checks
    const rs = rows(file).filter((r) => Number(r.num_tensor_parallel_workers) === p.data.tp);
    const e = errors(
      rs.map((r) => [
        p.layerLinearMs(Number(r.num_tokens)),
        LAYER_OPS.reduce((s, op) => s + med(r, op), 0),
      ]),
    );
    assert.ok(rs.length > 200 && e.mape < 0.02 && e.over10 < 0.02, `${name}: ${JSON.stringify(e)}`);
  }
});

test(
  'the attention fit follows every attention.csv row in the source shape',
  { skip: noRaw },
  () => {
    const p = loadFittedProfile('llama-2-70b/a100/tp2');
    const pre: [number, number][] = [];
    const dec: [number, number][] = [];
    for (const r of rows('history-6555c85/data/profiling/a100/attention.csv')) {
      const reshape = med(r, 'attn_input_reshape') + med(r, 'attn_output_reshape');
      const [b, c, k] = [
        Number(r.batch_size),
        Number(r.prefill_chunk_size),
        Number(r.kv_cache_size),
      ];
      if (r.is_prefill === 'True')
        pre.push([p.attnPrefillMs(c, 1, c * (k + c)), med(r, 'attn_prefill') + reshape]);
      else dec.push([p.attnDecodeMs(b, b * k), med(r, 'attn_decode') + reshape]);
    }
    const [ep, ed] = [errors(pre), errors(dec)];
    assert.ok(
      pre.length > 4000 && ep.mape < 0.03 && ep.over10 < 0.02,
      `prefill ${JSON.stringify(ep)}`,
    );
    // Decode is not monotone in batch in the source (see the checks' note); the fit smooths it.
    assert.ok(
      dec.length > 10000 && ed.mape < 0.05 && ed.over10 < 0.1,
      `decode ${JSON.stringify(ed)}`,
    );
  },
);

test('all-reduce curves follow the profiled rows from 2 MiB', { skip: noRaw }, () => {
  for (const [name, dir] of [
    ['llama-2-70b/h100/tp4', 'h100_dgx'],
    ['llama-2-70b/a100/tp8', 'a100_dgx'],
  ] as const) {
    const p = loadFittedProfile(name);
    const rs = rows(`network/${dir}/all_reduce.csv`).filter(
      (r) =>
        Number(r.num_workers) === p.data.tp &&
        Number(r.devices_per_node) === p.data.tp &&
        Number(r.size) >= 2 ** 21,
    );
    const e = errors(rs.map((r) => [p.ncclAllReduceMs(Number(r.size)), med(r, 'all_reduce')]));
    assert.ok(rs.length > 500 && e.mape < 0.04 && e.over10 < 0.05, `${name}: ${JSON.stringify(e)}`);
  }
});

test('a compute calibration scales prefill work above the one-token floor and leaves a lone decode alone', () => {
  const raw = loadFittedProfile('llama-3-8b/h100/tp1');
  const k = raw.data.computeScale?.value ?? 0;
  assert.equal(k, 1.42);
  const derived = raw.withComputeScale(k);
  const decode = { ...emptyShape(), decodeSeqs: 1, decodeContextTokens: 500 };
  assert.equal(derived.gpuStepMs(decode), raw.gpuStepMs(decode));
  const prefill = {
    ...emptyShape(),
    prefillTokens: 8192,
    prefillSeqs: 1,
    prefillAttnWork: 8192 * 8192,
  };
  const floor = raw.layerLinearMs(1);
  const expected =
    derived.data.layers *
      (floor +
        k * (raw.layerLinearMs(8192) - floor) +
        k * raw.attnPrefillMs(8192, 1, 8192 * 8192)) +
    raw.embeddingMs(8192) +
    raw.lmHeadMs(1);
  assert.ok(Math.abs(derived.gpuStepMs(prefill) - expected) < 1e-9 * expected);
  // Measured profiles carry none.
  assert.equal(loadFittedProfile('llama-3-8b/a100/tp1').data.computeScale, undefined);
});

test('an engine applies the calibration only for the versions it was measured with', () => {
  const prefill = {
    ...emptyShape(),
    prefillTokens: 4096,
    prefillSeqs: 1,
    prefillAttnWork: 4096 ** 2,
  };
  const raw = loadFittedProfile('llama-3-8b/h100/tp1');
  assert.deepEqual(raw.data.computeScale?.engineVersions, ['vllm-0.6']);
  const gpuMs = (engineVersion: string, computeScale?: number) =>
    (
      buildEngineProfile({
        ...ENGINE_DEFAULTS,
        model: 'llama-3-8b',
        gpu: 'h100',
        engineVersion,
        ...(computeScale === undefined ? {} : { computeScale }),
      }) as HostTimedProfile
    ).gpu.gpuStepMs(prefill);
  assert.equal(gpuMs('vllm-0.6'), raw.withComputeScale(1.42).gpuStepMs(prefill));
  assert.equal(gpuMs('vllm-v1'), raw.gpuStepMs(prefill));
  assert.equal(gpuMs('vllm-v1', 2), raw.withComputeScale(2).gpuStepMs(prefill));
});
