import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DecisionRecord } from '../core/observe/decision-record.ts';
import { openDecisionLog } from './decision-log.ts';

const record = (id: string) => ({ request_id: id, tenant: 'acme' }) as unknown as DecisionRecord;

test('records are appended as JSON lines, and all of them are out once close resolves', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'goodput-dlog-')), 'decisions.jsonl');
  for (const run of [1, 2]) {
    const log = openDecisionLog(file, (e) => assert.fail(e));
    for (let i = 0; i < 1_000; i++) log.write(record(`run${run}-${i}`));
    await log.close();
  }
  const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
  assert.equal(lines.length, 2_000, 'the second run appended to the first');
  const last = JSON.parse(lines[1_999]) as Record<string, unknown>;
  assert.equal(last.request_id, 'run2-999');
  assert.equal(last.tenant, 'acme');
  assert.equal(last.msg, 'decision');
});

test('a write that fails (a full disk) is told once; later records are dropped, close still resolves', async () => {
  const errors: Error[] = [];
  const log = openDecisionLog('/dev/full', (e) => errors.push(e));
  log.write(record('a'));
  await new Promise((r) => setTimeout(r, 50));
  for (let i = 0; i < 10; i++) log.write(record(`b${i}`));
  await log.close();
  assert.equal(errors.length, 1);
  assert.match(errors[0].message, /ENOSPC/);
});
