import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRng } from '../../runtime/seeded-rng.ts';
import { LengthDraw, lengthSampler } from './length-draw.ts';
import { parseLengthSpec } from './length-spec.ts';
import { lengthTable, type LengthTableName } from './sharegpt-lengths.ts';
import { mean, near } from './test-stats.ts';

const N = 200_000;

function sample(spec: string, n = N): Int32Array {
  const draw = lengthSampler(
    parseLengthSpec(spec, '--input'),
    new SeededRng(11),
    lengthTable('sharegpt-sarathi').input,
  );
  const xs = new Int32Array(n);
  for (let i = 0; i < n; i++) xs[i] = draw();
  return xs;
}

test('fixed always gives its value', () => {
  assert.ok(sample('fixed:77', 1000).every((x) => x === 77));
});

test('uniform reaches both ends, stays inside and is flat', () => {
  const xs = sample('uniform:3:12');
  const counts = new Map<number, number>();
  for (const x of xs) counts.set(x, (counts.get(x) ?? 0) + 1);
  assert.deepEqual(
    [...counts.keys()].sort((a, b) => a - b),
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
  );
  for (const c of counts.values()) assert.ok(near(c, N / 10, 0.03));
});

test('uniform with one value is that value', () => {
  assert.ok(sample('uniform:5:5', 1000).every((x) => x === 5));
});

test('exp gives integers of at least 1 with the requested mean', () => {
  const xs = sample('exp:200');
  assert.ok(xs.every((x) => Number.isInteger(x) && x >= 1));
  assert.ok(near(mean(xs), 200, 0.02), `mean ${mean(xs)}`);
  const small = sample('exp:0.2');
  assert.ok(small.every((x) => x >= 1));
  assert.ok(small.some((x) => x > 1));
});

function pairKey(i: number, o: number): string {
  return `${i},${o}`;
}

function rowsOf(name: LengthTableName): Set<string> {
  const t = lengthTable(name);
  const rows = new Set<string>();
  for (let i = 0; i < t.rows; i++) rows.add(pairKey(t.input[i], t.output[i]));
  return rows;
}

const TABLES = {
  'sharegpt-sarathi': lengthTable('sharegpt-sarathi'),
  'sharegpt-vllm': lengthTable('sharegpt-vllm'),
};

// Means of each table (SOURCE.md); wide bounds, as 20,000 draws of a skewed length vary.
const MEANS = [
  ['sharegpt-sarathi', 2340, 439],
  ['sharegpt-vllm', 215, 200],
] as const;

for (const [name, inputMean, outputMean] of MEANS) {
  test(`${name} for both sides draws whole rows with the table's means`, () => {
    const rows = rowsOf(name);
    const spec = parseLengthSpec(name, '--input');
    const d = new LengthDraw(spec, spec, new SeededRng(1, 'a'), new SeededRng(1, 'b'), TABLES);
    assert.ok(d.joint);
    let inputs = 0;
    let outputs = 0;
    for (let i = 0; i < 20_000; i++) {
      d.next();
      assert.ok(rows.has(pairKey(d.input, d.output)), `${d.input},${d.output} is not a row`);
      inputs += d.input;
      outputs += d.output;
    }
    assert.ok(near(inputs / 20_000, inputMean, 0.05), `input mean ${inputs / 20_000}`);
    assert.ok(near(outputs / 20_000, outputMean, 0.05), `output mean ${outputs / 20_000}`);
  });
}

test('the joint row is drawn from the input stream, one draw per request', () => {
  const t = lengthTable('sharegpt-vllm');
  const spec = parseLengthSpec('sharegpt-vllm', '--input');
  const d = new LengthDraw(spec, spec, new SeededRng(4, 'a'), new SeededRng(4, 'b'), TABLES);
  const rng = new SeededRng(4, 'a');
  for (let i = 0; i < 1000; i++) {
    d.next();
    const row = Math.floor(rng.next() * t.rows);
    assert.deepEqual([d.input, d.output], [t.input[row], t.output[row]]);
  }
});

test('different tables on each side each read their own column from their own stream', () => {
  const vllm = lengthTable('sharegpt-vllm');
  const sarathi = lengthTable('sharegpt-sarathi');
  const d = new LengthDraw(
    parseLengthSpec('sharegpt-vllm', '--input'),
    parseLengthSpec('sharegpt-sarathi', '--output'),
    new SeededRng(2, 'a'),
    new SeededRng(2, 'b'),
    TABLES,
  );
  assert.ok(!d.joint);
  const inputRng = new SeededRng(2, 'a');
  const outputRng = new SeededRng(2, 'b');
  let inputs = 0;
  for (let i = 0; i < 5000; i++) {
    d.next();
    assert.equal(d.input, vllm.input[Math.floor(inputRng.next() * vllm.rows)]);
    assert.equal(d.output, sarathi.output[Math.floor(outputRng.next() * sarathi.rows)]);
    inputs += d.input;
  }
  assert.ok(near(inputs / 5000, 215, 0.1), `input mean ${inputs / 5000}`);
});

test('a table on one side only draws that side from its own stream', () => {
  const t = lengthTable('sharegpt-sarathi');
  const share = parseLengthSpec('sharegpt-sarathi', '--output');
  const fixed = parseLengthSpec('fixed:10', '--input');
  const d = new LengthDraw(fixed, share, new SeededRng(1, 'a'), new SeededRng(1, 'b'), TABLES);
  assert.ok(!d.joint);
  const outs = new Set<number>(t.output);
  for (let i = 0; i < 1000; i++) {
    d.next();
    assert.equal(d.input, 10);
    assert.ok(outs.has(d.output));
  }
});

test('changing the input spec leaves the output draws unchanged', () => {
  const out = parseLengthSpec('uniform:1:1000', '--output');
  const outputs = (inputSpec: string): number[] => {
    const d = new LengthDraw(
      parseLengthSpec(inputSpec, '--input'),
      out,
      new SeededRng(9, 'lengths'),
      new SeededRng(9, 'lengths.output'),
      TABLES,
    );
    return Array.from({ length: 500 }, () => (d.next(), d.output));
  };
  assert.deepEqual(outputs('fixed:5'), outputs('exp:300'));
  assert.deepEqual(outputs('fixed:5'), outputs('sharegpt-sarathi'));
  assert.deepEqual(outputs('fixed:5'), outputs('sharegpt-vllm'));
});
