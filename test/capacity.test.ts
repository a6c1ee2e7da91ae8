// `goodput capacity` through real processes: a simulated search writes an envelope that
// `simulate --capacity-envelope` loads; a live search probes a `goodput engine` with
// `goodput bench`; bad input exits 2 naming the flag or the field.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseEnvelope } from '../src/core/autoscale/capacity-envelope.ts';
import { runGoodput, startEngine } from './gateway/process-kit.ts';
import { tempDir } from './temp-dir.ts';

const dir = tempDir('capacity');
const MIX = ['--input', 'uniform:100:600', '--output', 'uniform:50:250'];

test('capacity (simulated): a bracketed search, an envelope the autoscaler loads', async () => {
  const out = join(dir, 'envelope.json');
  const r = await runGoodput([
    'capacity',
    ...MIX,
    '--probe-seconds',
    '30',
    '--precision',
    '0.1',
    '--out',
    out,
  ]);
  assert.equal(r.code, 0, r.out);
  const e = parseEnvelope(JSON.parse(readFileSync(out, 'utf8')));
  const doc = JSON.parse(readFileSync(out, 'utf8')) as {
    probes: { rate_per_group_rps: number; pass: boolean }[];
    failed_at_rps: number;
  };
  assert.ok(
    e.rate_per_group_rps > 1,
    `a group serves more than 1 req/s of this mix: ${e.rate_per_group_rps}`,
  );
  assert.ok(doc.failed_at_rps / e.rate_per_group_rps <= 1.1, 'bracketed within the precision');
  assert.ok(doc.probes.some((p) => p.pass) && doc.probes.some((p) => !p.pass));
  assert.ok(e.mix.input_mean > 300 && e.mix.input_mean < 400, String(e.mix.input_mean));
  assert.match(r.out, /capacity: [\d.]+ req\/s per group at 99\.0% attainment/);

  const sim = await runGoodput([
    'simulate',
    ...MIX,
    '--rate',
    '20',
    '--num-requests',
    '600',
    '--policy',
    'goodput',
    '--autoscaler',
    'goodput',
    '--capacity-envelope',
    out,
    '--out',
    join(dir, 'report.json'),
  ]);
  assert.equal(sim.code, 0, sim.out);

  // Measured on llama-3-8b/h100/tp1: no capacity of a 70B's on four GPUs.
  const other = await runGoodput([
    'simulate',
    '--model',
    'llama-3-70b',
    '--tp',
    '4',
    '--autoscaler',
    'goodput',
    '--capacity-envelope',
    out,
  ]);
  assert.equal(other.code, 2, other.out);
  assert.match(
    other.out,
    /--capacity-envelope: expected an envelope measured on the engine planned with \(llama-3-70b\/h100\/tp4 vllm-v1\), got ".*envelope\.json \(measured on llama-3-8b\/h100\/tp1 vllm-v1\)"/,
  );
});

test('capacity (live): probes goodput engine with goodput bench, judged by --goodput', async () => {
  const engine = await startEngine(['--seed', '4']);
  const out = join(dir, 'live.json');
  const r = await runGoodput([
    'capacity',
    '--url',
    engine,
    ...MIX,
    '--goodput',
    'ttft:60000',
    '--rate',
    '4',
    '--probe-seconds',
    '1',
    '--num-requests',
    '8',
    '--max-probes',
    '3',
    '--out',
    out,
  ]);
  assert.equal(r.code, 0, r.out);
  const e = parseEnvelope(JSON.parse(readFileSync(out, 'utf8')));
  assert.ok(e.source.startsWith('live:http://127.0.0.1:'), e.source);
  assert.equal(e.rate_per_group_rps, 16, 'every probe passes an SLO of a minute: 4, 8, 16');
});

test('capacity and --capacity-envelope: bad input exits 2 naming the flag or the field', async () => {
  const bad = join(dir, 'bad.json');
  writeFileSync(
    bad,
    JSON.stringify({ kind: 'goodput-capacity-envelope', version: 1, rate_per_group_rps: 0 }),
  );
  const cases: [string[], RegExp][] = [
    [['capacity', '--trace', 'x.csv'], /--trace: expected a synthetic mix/],
    [
      ['capacity', '--url', 'http://127.0.0.1:9'],
      /--goodput: expected the SLO a live probe judges by/,
    ],
    [['capacity', '--target', '1.5'], /--target: expected a number in \(0, 1\]/],
    [['capacity', '--autoscaler', 'goodput'], /--autoscaler: expected none/],
    [
      ['simulate', '--autoscaler', 'goodput', '--capacity-envelope', join(dir, 'missing.json')],
      /--capacity-envelope: expected a readable file/,
    ],
    [
      ['simulate', '--autoscaler', 'goodput', '--capacity-envelope', bad],
      /bad\.json: rate_per_group_rps: expected a number > 0, got 0/,
    ],
  ];
  for (const [args, message] of cases) {
    const r = await runGoodput(args);
    assert.equal(r.code, 2, `${args.join(' ')}\n${r.out}`);
    assert.match(r.out, message);
  }
});

test('capacity whose every probe held: said to be a lower bound, not the capacity', async () => {
  const out = join(dir, 'unbracketed.json');
  const r = await runGoodput([
    'capacity',
    '--input',
    'fixed:200',
    '--output',
    'fixed:100',
    '--probe-seconds',
    '10',
    '--max-probes',
    '2',
    '--out',
    out,
  ]);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /every probe held the target: 2 req\/s per group is a lower bound/);
  const doc = JSON.parse(readFileSync(out, 'utf8')) as { failed_at_rps: number | null };
  assert.equal(doc.failed_at_rps, null);
});

test('capacity where no probe served a request: its latencies are none, a dash, not 0 ms', async () => {
  const out = join(dir, 'none-served.json');
  // Every prompt is past the 8K context: refused, or failed, never served.
  const r = await runGoodput([
    'capacity',
    ...['--input', 'fixed:10000', '--output', 'fixed:10', '--max-probes', '2', '--out', out],
  ]);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /no rate held the target: capacity 0/);
  assert.match(r.out, /—\s+—\n/);
  const doc = JSON.parse(readFileSync(out, 'utf8')) as {
    probes: { ttft_p99_ms: number | null; tpot_p99_ms: number | null }[];
  };
  for (const p of doc.probes) assert.deepEqual([p.ttft_p99_ms, p.tpot_p99_ms], [null, null]);
});
