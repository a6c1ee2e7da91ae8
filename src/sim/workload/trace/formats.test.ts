import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { detectTraceFormat } from './formats.ts';
import { fixture } from './test-fixtures.ts';

function firstLine(name: string): string {
  return readFileSync(fixture(name), 'utf8').split('\n')[0];
}

test('detects each format from its first line', () => {
  assert.equal(detectTraceFormat(firstLine('azure-conv-200.csv'))?.name, 'azure');
  assert.equal(detectTraceFormat(firstLine('mooncake.jsonl'))?.name, 'mooncake');
  assert.equal(detectTraceFormat(firstLine('burstgpt.csv'))?.name, 'burstgpt');
  assert.equal(detectTraceFormat(firstLine('native.jsonl'))?.name, 'native');
});

test('the formats never both claim a line', () => {
  for (const name of ['azure-conv-200.csv', 'mooncake.jsonl', 'burstgpt.csv', 'native.jsonl']) {
    const line = firstLine(name);
    const claims = ['azure', 'mooncake', 'burstgpt', 'native'].filter(
      (f) => detectTraceFormat(line)?.name === f,
    );
    assert.equal(claims.length, 1, name);
  }
});

test('detects nothing in what is none of them', () => {
  for (const line of ['', 'a,b,c', '{"t": 1}', '[1,2]', '{not json', 'timestamp,input_length']) {
    assert.equal(detectTraceFormat(line), undefined, line);
  }
});

test('header names match case-insensitively', () => {
  assert.equal(detectTraceFormat('timestamp,contexttokens,generatedtokens')?.name, 'azure');
  assert.equal(
    detectTraceFormat(' Timestamp , Request tokens , Response tokens ')?.name,
    'burstgpt',
  );
});
