import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readLines } from './read-lines.ts';

const dir = mkdtempSync(join(tmpdir(), 'goodput-lines-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

test('splits on LF and CRLF, keeps blank lines, handles a missing final newline', () => {
  const path = file('a.txt', 'one\r\ntwo\n\nthree');
  assert.deepEqual([...readLines(path)], ['one', 'two', '', 'three']);
  assert.deepEqual([...readLines(file('b.txt', 'x\n'))], ['x']);
  assert.deepEqual([...readLines(file('c.txt', ''))], []);
});

test('drops a UTF-8 byte-order mark', () => {
  const path = file(
    'bom.txt',
    Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('h1,h2\n1,2\n')]),
  );
  assert.deepEqual([...readLines(path)], ['h1,h2', '1,2']);
});

test('lines and multi-byte characters that straddle chunk boundaries come out whole', () => {
  const lines = Array.from({ length: 60_000 }, (_, i) => `${i},é€😀,${'x'.repeat(i % 97)}`);
  const path = file('big.txt', lines.join('\r\n') + '\r\n');
  const read = [...readLines(path)];
  assert.equal(read.length, lines.length);
  assert.deepEqual(read, lines);
});
