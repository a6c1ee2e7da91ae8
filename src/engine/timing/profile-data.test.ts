// Profile validation: a committed profile passes; each kind of damage fails naming file and field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { validateProfileData } from './profile-data.ts';
import { PROFILES_DIR } from './profile-registry.ts';

const FILE = join(PROFILES_DIR, 'llama-3-8b-a100-tp1.json');
const fresh = () => JSON.parse(readFileSync(FILE, 'utf8')) as Record<string, unknown>;

test('a committed profile validates', () => {
  const d = validateProfileData(fresh(), FILE);
  assert.equal(d.name, 'llama-3-8b/a100/tp1');
  assert.equal(d.layerLinearMs.x.length, d.layerLinearMs.y.length);
});

test('a malformed profile names the file and the field', () => {
  const bad = (edit: (d: Record<string, unknown>) => void, field: RegExp) => {
    const d = fresh();
    edit(d);
    assert.throws(
      () => validateProfileData(d, 'x.json'),
      (e: Error) => e.message.startsWith('x.json: ') && field.test(e.message),
    );
  };
  bad(
    (d) => (d.schema = 'v0'),
    /^x\.json: schema: expected "goodput\.timing-profile\/1", got "v0"$/,
  );
  bad((d) => delete d.name, /name: expected a non-empty string, got undefined/);
  bad(
    (d) => ((d.layerLinearMs as { y: number[] }).y = [1]),
    /layerLinearMs\.y: expected an array of ≥ 2/,
  );
  bad(
    (d) => ((d.embeddingMs as { x: number[] }).x = [2, 1]),
    /embeddingMs\.x\[1\]: expected a value > 2, got 1/,
  );
  bad((d) => ((d.lmHeadMs as { tail: unknown }).tail = { kind: 'cubic' }), /lmHeadMs\.tail\.kind/);
  bad(
    (d) => ((d.attention as { decode: { grid: { v: number[][] } } }).decode.grid.v = [[1, 1]]),
    /attention\.decode\.grid\.v: expected \d+ rows/,
  );
  bad(
    (d) => ((d.attention as { prefill: { grid: { v: number[][] } } }).prefill.grid.v[3][2] = NaN),
    /attention\.prefill\.grid\.v\[3\]\[2\]: expected a finite number/,
  );
  bad((d) => (d.tp = 2), /allReduce: expected an all-reduce table when tp > 1/);
  bad((d) => (d.tp = 1.5), /tp: expected an integer/);
  bad((d) => ((d.cpuOverhead as { fixedMs: unknown }).fixedMs = 'x'), /cpuOverhead\.fixedMs/);
  bad(
    (d) => (d.checks = [{ component: 'gpu', input: {}, expectedMs: 1, source: 's' }]),
    /checks\[0\]\.component/,
  );
  bad(
    (d) =>
      (d.checks = [{ component: 'cpu_overhead', input: { seqs: 1 }, expectedMs: 0, source: 's' }]),
    /checks\[0\]\.expectedMs/,
  );
});
