import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { epochMs } from '../runtime/wall-clock.ts';
import { openDecisionLog } from './decision-log.ts';
import { tempDir } from '../../test/temp-dir.ts';

const record = (id: string) => JSON.stringify({ request_id: id, tenant: 'acme' });

test('records are appended as JSON lines, and all of them are out once close resolves', async () => {
  const file = join(tempDir('dlog'), 'decisions.jsonl');
  for (const run of [1, 2]) {
    const log = openDecisionLog(file, (e) => assert.fail(e), epochMs);
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

test("a line is the record's keys inside pino's envelope, multi-byte text included", async () => {
  const file = join(tempDir('dlog'), 'decisions.jsonl');
  const log = openDecisionLog(file, (e) => assert.fail(e), epochMs);
  const before = Math.round(epochMs());
  log.write(
    JSON.stringify({ request_id: 'é-1', tenant: 'Zoë 🚀', admission: { result: 'reject' } }),
  );
  const after = Math.round(epochMs());
  await log.close();
  const text = readFileSync(file, 'utf8');
  assert.equal(text.split('\n').length, 2, 'one line, ended by a line break');
  const line = JSON.parse(text) as Record<string, unknown>;
  assert.deepEqual(Object.keys(line), [
    'level',
    'time',
    'pid',
    'hostname',
    'request_id',
    'tenant',
    'admission',
    'msg',
  ]);
  assert.equal(line.level, 30);
  assert.ok((line.time as number) >= before && (line.time as number) <= after);
  assert.equal(line.pid, process.pid);
  assert.equal(line.hostname, hostname());
  assert.equal(line.tenant, 'Zoë 🚀');
  assert.deepEqual(line.admission, { result: 'reject' });
  assert.equal(line.msg, 'decision');
});

test('a line reaches the file while the log stays open, for an operator tailing it', async () => {
  const file = join(tempDir('dlog'), 'decisions.jsonl');
  const log = openDecisionLog(file, (e) => assert.fail(e), epochMs);
  log.write(record('tailed'));
  // One short line is far below the batch size: only the periodic flush writes it out.
  let text = '';
  for (let i = 0; i < 100 && !text.includes('tailed'); i++) {
    await new Promise((r) => setTimeout(r, 50));
    text = readFileSync(file, 'utf8');
  }
  assert.equal((JSON.parse(text) as { request_id: string }).request_id, 'tailed');
  await log.close();
});

test('a write that fails (a full disk) is told once; later records are dropped, close still resolves', async () => {
  const errors: Error[] = [];
  const log = openDecisionLog('/dev/full', (e) => errors.push(e), epochMs);
  log.write(record('a'));
  await new Promise((r) => setTimeout(r, 50));
  for (let i = 0; i < 10; i++) log.write(record(`b${i}`));
  await log.close();
  assert.equal(errors.length, 1);
  assert.match(errors[0].message, /ENOSPC/);
});

test('a log whose last line was cut: the next record starts a line of its own', async () => {
  const file = join(tempDir('dlog'), 'decisions.jsonl');
  writeFileSync(file, '{"level":30,"time":1,"request_id":"cut');
  const log = openDecisionLog(file, (e) => assert.fail(e), epochMs);
  log.write(record('next'));
  await log.close();
  const lines = readFileSync(file, 'utf8').split('\n');
  assert.equal(lines[0], '{"level":30,"time":1,"request_id":"cut');
  assert.equal((JSON.parse(lines[1]) as { request_id: string }).request_id, 'next');
});
