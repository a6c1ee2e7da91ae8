/**
 * Fits the engine's timing profiles from Vidur's measured operator times and writes them to
 * data/profiles/<model>-<gpu>-tp<N>.json, with SOURCE.md and Vidur's licence beside them.
 *
 *   node scripts/fit-profiles.ts [--data ../shared/data] [--out data/profiles]
 *
 * Main rule: the raw CSVs are not committed, so each JSON carries its sources, method, fitted
 * tables, error statistics and a set of source check points that the test suite re-verifies
 * from a clone alone. A check more than 10% off fails the run.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { MODELS } from '../src/engine/hardware.ts';
import { FittedProfile } from '../src/engine/timing/fitted-profile.ts';
import { PROFILE_SCHEMA } from '../src/engine/timing/profile-data.ts';
import { attentionScaling, fitAttention } from './fit-profiles/attention.ts';
import { computeCalibration } from './fit-profiles/calibration.ts';
import { formatJson } from './fit-profiles/json-format.ts';
import { derivationCrossCheck, fitLinear, gpuSpeedups } from './fit-profiles/linear.ts';
import {
  customAllReduce,
  fitAllReduce,
  fitCpuOverhead,
  type AllReduceFit,
} from './fit-profiles/network-cpu.ts';
import { readOpTable, type OpTable } from './fit-profiles/op-table.ts';
import { sourceMarkdown } from './fit-profiles/source-md.ts';
import { Sources, VIDUR } from './fit-profiles/sources.ts';
import { printSummary } from './fit-profiles/summary.ts';

interface Target {
  readonly model: string;
  readonly gpu: 'a100' | 'h100';
  readonly tp: number;
  /** Llama-2 model whose H100 ÷ A100 op ratios carry an A100-only model to H100. */
  readonly ref?: string;
}

export const TARGETS: readonly Target[] = [
  { model: 'llama-3-8b', gpu: 'a100', tp: 1 },
  { model: 'llama-3-8b', gpu: 'h100', tp: 1, ref: 'llama-2-7b' },
  { model: 'llama-3-70b', gpu: 'a100', tp: 4 },
  { model: 'llama-3-70b', gpu: 'a100', tp: 8 },
  { model: 'llama-3-70b', gpu: 'h100', tp: 4, ref: 'llama-2-70b' },
  { model: 'llama-3-70b', gpu: 'h100', tp: 8, ref: 'llama-2-70b' },
  { model: 'llama-2-7b', gpu: 'a100', tp: 1 },
  { model: 'llama-2-7b', gpu: 'h100', tp: 1 },
  { model: 'llama-2-70b', gpu: 'a100', tp: 2 },
  { model: 'llama-2-70b', gpu: 'a100', tp: 4 },
  { model: 'llama-2-70b', gpu: 'a100', tp: 8 },
  { model: 'llama-2-70b', gpu: 'h100', tp: 4 },
  { model: 'llama-2-70b', gpu: 'h100', tp: 8 },
];

const CHECK_TOLERANCE = 0.1;

const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({
  options: { data: { type: 'string' }, out: { type: 'string' } },
});
const dataDir = resolve(repo, args.data ?? '../shared/data');
const outDir = resolve(repo, args.out ?? 'data/profiles');
const src = new Sources(dataDir);
if (!existsSync(src.root)) {
  console.error(
    `no raw profiling data at ${src.root}; pass --data <folder holding profiles/vidur>`,
  );
  process.exit(1);
}

const tables = new Map<string, OpTable>();
function opTable(gpu: string, model: string, tp: number): OpTable {
  const key = `${gpu}/${model}/${tp}`;
  if (!tables.has(key)) tables.set(key, readOpTable(src.mlp(gpu, model), MODELS[model], tp));
  return tables.get(key)!;
}
const allReduces = new Map<string, AllReduceFit>();
function allReduce(gpu: string, tp: number): AllReduceFit {
  const key = `${gpu}/${tp}`;
  if (!allReduces.has(key)) allReduces.set(key, fitAllReduce(src.allReduce(gpu), tp));
  return allReduces.get(key)!;
}

const attention = fitAttention(src.attention());
const cpu = fitCpuOverhead(src.cpuOverheads());
const speedup = gpuSpeedups(opTable('a100', 'llama-2-7b', 1), opTable('h100', 'llama-2-7b', 1));
const speedupFor = (gpu: string) =>
  gpu === 'a100' ? { memoryBound: 1, computeBound: 1 } : speedup;

mkdirSync(outDir, { recursive: true });
let failures = 0;
const written: FittedProfile[] = [];
for (const t of TARGETS) {
  const model = MODELS[t.model];
  const name = `${t.model}/${t.gpu}/tp${t.tp}`;
  const ref = t.ref
    ? { name: t.ref, a100: opTable('a100', t.ref, t.tp), h100: opTable('h100', t.ref, t.tp) }
    : undefined;
  const base = opTable(ref ? 'a100' : t.gpu, t.model, t.tp);
  const linear = fitLinear({ model, base, ref });
  const scaling = attentionScaling(model, t.tp, t.gpu, speedupFor(t.gpu));
  const ar = t.tp > 1 ? allReduce(t.gpu, t.tp) : null;
  const custom = t.tp > 1 ? customAllReduce(t.gpu, t.tp) : undefined;
  const calibration = computeCalibration(name);
  const files = [
    base.file,
    ...(ref ? [ref.a100.file, ref.h100.file] : []),
    src.attention(),
    src.cpuOverheads(),
  ];
  if (ar) files.push(src.allReduce(t.gpu));
  let crossCheck = {};
  if (ref) {
    const other = t.ref === 'llama-2-7b' ? 'llama-2-70b' : 'llama-2-7b';
    const [oa, oh] = [opTable('a100', other, t.tp), opTable('h100', other, t.tp)];
    crossCheck = {
      derivationCrossCheck: {
        [`${other} H100 from its A100 × ${t.ref} ratios`]: derivationCrossCheck(
          oa,
          oh,
          ref.a100,
          ref.h100,
        ),
        [`${t.ref} H100 from its A100 × ${other} ratios`]: derivationCrossCheck(
          ref.a100,
          ref.h100,
          oa,
          oh,
        ),
      },
    };
  }
  const method = [
    `step_ms = cpuOverhead(S) + embedding(T) + lmHead(S) + layers × [layerLinear(T) + attnPrefill + attnDecode` +
      (t.tp > 1 ? ` + 2 × allReduce(T × hidden × 2 bytes)]` : `]`) +
      `, with T = prefillTokens + decodeSeqs and S = prefillSeqs + decodeSeqs; layers = ${model.layers}.`,
    linear.method,
    scaling.method,
    ar
      ? `All-reduce (two per layer, after attention and after the MLP, ${model.hidden} × 2 bytes per token): running ` +
        `median of ${src.allReduce(t.gpu).cite} for ${t.tp} workers on one node, over message size (8 points per ` +
        `octave, ±1/8 octave window), non-decreasing, linear past 64 MiB.`
      : 'No all-reduce at TP 1.',
    ...(ar && custom !== undefined
      ? [
          `Up to ${custom.maxBytes} bytes vLLM runs its custom all-reduce instead, where faster: ` +
            `its latency at ${t.tp} GPUs as measured on ${t.gpu.toUpperCase()} (${custom.source}), non-decreasing, linear past the last size.`,
        ]
      : []),
    cpu.method,
    ...(calibration === undefined
      ? []
      : [
          `Calibrated to measured vLLM serving: the share of each linear-op time above its one-token time, and ` +
            `prefill attention, × ${calibration.value} when served by ${calibration.engineVersions.join(', ')} ` +
            `(${calibration.source}; see scripts/fit-profiles/calibration.ts).`,
        ]),
  ].join('\n');
  const data = {
    schema: PROFILE_SCHEMA,
    name,
    model: t.model,
    gpu: t.gpu,
    tp: t.tp,
    layers: model.layers,
    method,
    source: {
      ...VIDUR,
      licenceFile: 'data/profiles/LICENSE-vidur',
      files: files.map((f) => f.cite),
    },
    layerLinearMs: linear.layerLinearMs,
    embeddingMs: linear.embeddingMs,
    lmHeadMs: linear.lmHeadMs,
    attention: {
      prefill: { scale: scaling.prefillScale, grid: attention.prefill },
      decode: {
        batchPerSeq: scaling.decodeBatchPerSeq,
        scale: scaling.decodeScale,
        grid: attention.decode,
      },
    },
    allReduce: ar
      ? {
          bytesPerToken: model.hidden * model.dtypeBytes,
          ms: ar.ms,
          ...(custom === undefined ? {} : { custom }),
        }
      : null,
    cpuOverhead: { fixedMs: cpu.fixedMs, perSeqMs: cpu.perSeqMs },
    ...(calibration === undefined ? {} : { computeScale: calibration }),
    fitError: {
      ...linear.fitError,
      ...attention.fitError,
      ...(ar ? ar.fitError : {}),
      ...cpu.fitError,
      ...crossCheck,
    },
    checks: [...linear.checks, ...attention.checks, ...(ar ? ar.checks : []), ...cpu.checks],
  };
  const file = join(outDir, `${t.model}-${t.gpu}-tp${t.tp}.json`);
  const text = formatJson(data) + '\n';
  const profile = FittedProfile.fromJson(JSON.parse(text), file);
  for (const c of profile.data.checks) {
    const got = profile.predictCheck(c);
    if (Math.abs(got - c.expectedMs) > CHECK_TOLERANCE * c.expectedMs) {
      failures++;
      console.error(
        `${name}: ${c.component} ${JSON.stringify(c.input)}: fit ${got.toFixed(4)} vs source ${c.expectedMs} (${c.source})`,
      );
    }
  }
  writeFileSync(file, text);
  written.push(profile);
}
writeFileSync(join(outDir, 'SOURCE.md'), sourceMarkdown(written.map((p) => p.name)));
// Written, not copied, so the copy does not inherit the raw data's read-only mode.
writeFileSync(join(outDir, 'LICENSE-vidur'), readFileSync(src.licence()));
printSummary(written, {
  speedup,
  out: relative(repo, outDir),
  tables: (gpu, model, tp) => opTable(gpu, model, tp),
});
if (failures > 0) {
  console.error(`${failures} check point(s) more than ${CHECK_TOLERANCE * 100}% off`);
  process.exitCode = 1;
}
