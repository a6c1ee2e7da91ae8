import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { isConfigError, isInputError } from '../../../core/errors.ts';
import type { TraceFormatName } from '../workload-options.ts';
import { fixture, scratch } from './test-fixtures.ts';
import { loadTrace } from './load-trace.ts';
import type { TraceTable } from './trace-table.ts';

const tmp = scratch('goodput-trace-');
after(tmp.cleanup);

function sum(xs: Int32Array): number {
  return xs.reduce((a, b) => a + b, 0);
}

function last(t: TraceTable): number {
  return t.tMs[t.rows - 1];
}

test('azure: 200 rows of the conv trace, times from the first row', () => {
  const t = loadTrace(fixture('azure-conv-200.csv'));
  assert.equal(t.format, 'azure');
  assert.equal(t.formatDetected, true);
  assert.equal(t.rows, 200);
  assert.equal(t.rowsRead, 200);
  assert.equal(t.tMs[0], 0);
  // 18:16:47.9441270 − 18:15:46.6805900
  assert.ok(Math.abs(last(t) - 61_263.537) < 1e-6, `last ${last(t)}`);
  assert.ok(Math.abs(t.tMs[1] - 4_314.579) < 1e-6);
  assert.equal(sum(t.inputTokens), 180_695);
  assert.equal(sum(t.outputTokens), 47_050);
  assert.equal(t.reordered, 0);
  assert.equal(t.extras, undefined);
});

test('mooncake: 512-token blocks, full blocks only, ids as strings', () => {
  const t = loadTrace(fixture('mooncake.jsonl'));
  assert.equal(t.format, 'mooncake');
  assert.equal(t.rows, 5);
  assert.equal(t.tMs[0], 0);
  assert.equal(last(t), 4001);
  assert.equal(sum(t.inputTokens), 4560);
  assert.equal(sum(t.outputTokens), 206);
  const prefixes = t.extras!.map((x) => x?.prefix);
  assert.deepEqual(prefixes[0], { blockTokens: 512, hashes: ['0', '1'] });
  assert.deepEqual(prefixes[1], { blockTokens: 512, hashes: ['0'] });
  assert.equal(prefixes[2], undefined, '300 tokens hold no full block');
  assert.deepEqual(prefixes[3]!.hashes, ['0', '1', '5', '6']);
  assert.deepEqual(prefixes[4]!.hashes, ['7']);
  assert.equal(prefixes[0]!.hashes[0], prefixes[3]!.hashes[0]);
});

test('burstgpt: seconds to ms, failed rows (0 response tokens) skipped and counted', () => {
  const t = loadTrace(fixture('burstgpt.csv'));
  assert.equal(t.format, 'burstgpt');
  assert.equal(t.rowsRead, 5);
  assert.deepEqual(t.skipped, { failed: 1 });
  assert.equal(t.rows, 4);
  assert.deepEqual([...t.tMs], [0, 113_000, 113_000, 296_500]);
  assert.equal(sum(t.inputTokens), 3209);
  assert.equal(sum(t.outputTokens), 868);
});

test('native: optional fields, blank lines, default 16-token blocks', () => {
  const t = loadTrace(fixture('native.jsonl'));
  assert.equal(t.format, 'native');
  assert.equal(t.rows, 4);
  assert.deepEqual([...t.tMs], [0, 250, 250, 1000.5]);
  assert.equal(sum(t.inputTokens), 2212);
  assert.equal(sum(t.outputTokens), 316);
  const x = t.extras!;
  assert.equal(x[0], undefined);
  assert.deepEqual(x[1], {
    tenant: 'acme',
    sloClass: 'batch',
    session: 's1',
    prefix: { blockTokens: 16, hashes: ['a', 'b', 'c'] },
  });
  assert.deepEqual(x[2], {
    maxTokens: 512,
    tenant: 'acme',
    session: 's1',
    prefix: { blockTokens: 32, hashes: ['1', '2'] },
  });
  assert.deepEqual(x[3], { sloClass: 'reasoning' });
});

test('unsorted rows are sorted stably, re-based to the earliest, and counted', () => {
  const t = loadTrace(fixture('native-unsorted.jsonl'));
  assert.deepEqual([...t.tMs], [0, 500, 1500, 2500, 2500]);
  assert.deepEqual(
    t.extras!.map((x) => x?.session),
    ['d', 'a', 'c', 'b', 'e'],
  );
  assert.deepEqual([...t.inputTokens], [4, 1, 3, 2, 5]);
  assert.equal(t.reordered, 2);
});

const malformed: [file: string, line: number, field: string, format?: TraceFormatName][] = [
  ['azure-bad-timestamp.csv', 5, 'TIMESTAMP'],
  ['azure-negative.csv', 3, 'GeneratedTokens'],
  ['azure-header-only.csv', 1, 'trace'],
  ['mooncake-bad-hash.jsonl', 2, 'hash_ids'],
  ['mooncake-missing-field.jsonl', 3, 'output_length'],
  ['mooncake-bad-json.jsonl', 2, 'json'],
  ['burstgpt-bad-number.csv', 3, 'Request tokens'],
  ['burstgpt-negative.csv', 4, 'Response tokens'],
  ['burstgpt-missing-column.csv', 1, 'format'],
  ['burstgpt-missing-column.csv', 1, 'Response tokens', 'burstgpt'],
  ['native-unknown-class.jsonl', 2, 'class'],
  ['native-negative.jsonl', 3, 'input_tokens'],
  ['native-bad-json.jsonl', 2, 'json'],
];

for (const [name, line, field, format] of malformed) {
  test(`${name}${format ? ` as ${format}` : ''}: InputError at line ${line}, ${field}`, () => {
    const path = fixture(name);
    assert.throws(
      () => loadTrace(path, format),
      (e) => isInputError(e) && e.file === path && e.line === line && e.field === field,
    );
  });
}

const inline: [name: string, text: string, line: number, field: string][] = [
  ['empty.csv', '', 1, 'trace'],
  ['blank.jsonl', '\n  \n', 2, 'trace'],
  ['unknown.txt', 'hello world\n', 1, 'format'],
  [
    'azure-feb30.csv',
    'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-30 00:00:00.0,1,1\n',
    2,
    'TIMESTAMP',
  ],
  [
    'azure-float.csv',
    'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-03 00:00:00.0,1.5,1\n',
    2,
    'ContextTokens',
  ],
  [
    'azure-zero.csv',
    'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-03 00:00:00.0,10,0\n',
    2,
    'GeneratedTokens',
  ],
  [
    'azure-short.csv',
    'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-03 00:00:00.0,10\n',
    2,
    'GeneratedTokens',
  ],
  [
    'native-key.jsonl',
    '{"t_ms": 0, "input_tokens": 1, "output_tokens": 1, "clas": "batch"}\n',
    1,
    'clas',
  ],
  ['native-time.jsonl', '{"t_ms": -1, "input_tokens": 1, "output_tokens": 1}\n', 1, 't_ms'],
  ['native-string.jsonl', '{"t_ms": "5", "input_tokens": 1, "output_tokens": 1}\n', 1, 't_ms'],
  ['native-missing.jsonl', '{"t_ms": 0, "output_tokens": 1}\n', 1, 'input_tokens'],
  ['native-array.jsonl', '{"t_ms": 0, "input_tokens": 1, "output_tokens": 1}\n[1]\n', 2, 'json'],
  [
    'native-prefix.jsonl',
    '{"t_ms": 0, "input_tokens": 40, "output_tokens": 1, "prefix_hashes": ["a", "b", "c"]}\n',
    1,
    'prefix_hashes',
  ],
  [
    'native-tenant.jsonl',
    '{"t_ms": 0, "input_tokens": 40, "output_tokens": 1, "tenant": ""}\n',
    1,
    'tenant',
  ],
  // Past MAX_REQUEST_TOKENS: refused, not wrapped in the trace's 32-bit columns.
  [
    'azure-huge.csv',
    'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4294967297,10\n',
    2,
    'ContextTokens',
  ],
  [
    'mooncake-huge.jsonl',
    '{"timestamp": 0, "input_length": 100, "output_length": 3000000000}\n',
    1,
    'output_length',
  ],
  [
    'burstgpt-late.csv',
    'Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n0,M,100,10,110,x\n1e306,M,100,10,110,x\n',
    3,
    'Timestamp',
  ],
  [
    'mooncake-time.jsonl',
    '{"timestamp": -5, "input_length": 1, "output_length": 1}\n',
    1,
    'timestamp',
  ],
  [
    'burstgpt-failed.csv',
    'Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,ChatGPT,10,0,10,API log\n',
    2,
    'trace',
  ],
];

for (const [name, text, line, field] of inline) {
  test(`${name}: InputError at line ${line}, ${field}`, () => {
    const path = tmp.file(name, text);
    assert.throws(
      () => loadTrace(path),
      (e) => isInputError(e) && e.line === line && e.field === field,
    );
  });
}

test('an empty trace says so', () => {
  const path = tmp.file('header.csv', 'TIMESTAMP,ContextTokens,GeneratedTokens\n');
  assert.throws(() => loadTrace(path), /no requests/);
  assert.throws(() => loadTrace(tmp.file('e.csv', '')), /empty/);
});

test('a missing file is a ConfigError on --trace', () => {
  assert.throws(
    () => loadTrace(fixture('no-such-trace.csv')),
    (e) => isConfigError(e) && e.path === '--trace',
  );
});

test('CRLF, a byte-order mark and extra columns in any order are read', () => {
  const path = tmp.file(
    'crlf.csv',
    '\ufeffGeneratedTokens,extra,TIMESTAMP,ContextTokens\r\n5,x,2023-11-16 18:15:46.5,10\r\n6,y,2023-11-16 18:15:47,20\r\n',
  );
  const t = loadTrace(path);
  assert.equal(t.format, 'azure');
  assert.deepEqual([...t.tMs], [0, 500]);
  assert.deepEqual([...t.inputTokens], [10, 20]);
  assert.deepEqual([...t.outputTokens], [5, 6]);
});

test('an explicit format skips detection', () => {
  const t = loadTrace(fixture('native.jsonl'), 'native');
  assert.equal(t.formatDetected, false);
  assert.throws(
    () => loadTrace(fixture('native.jsonl'), 'mooncake'),
    (e) => isInputError(e) && e.line === 1 && e.field === 'timestamp',
  );
});
