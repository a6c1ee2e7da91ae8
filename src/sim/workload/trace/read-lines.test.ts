import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_LINE_CHARS, readLines } from './read-lines.ts';

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

test('a line of many chunks comes out whole, its CRLF split across chunks', () => {
  // The first line's \r is the first chunk's last byte; the second spans three chunks.
  const a = 'a'.repeat((1 << 20) - 1);
  const b = 'b'.repeat(3 << 20);
  const path = file('long.txt', `${a}\r\n${b}\nc`);
  assert.deepEqual([...readLines(path)], [a, b, 'c']);
});

test('a line longer than any trace row is named, by its number, before it fills memory', () => {
  const path = file('endless.txt', `ok\n${'z'.repeat(MAX_LINE_CHARS + 10)}`);
  assert.throws(
    () => [...readLines(path)],
    /endless\.txt:2: line: longer than 16777216 characters/,
  );
});

test('a file the system will not read is a ConfigError naming the flag and the cause', () => {
  // Linux refuses a plain read of a process's memory: EIO.
  assert.throws(
    () => [...readLines('/proc/self/mem', '--trace')],
    /--trace: expected a file this process can read \(EIO\), got "\/proc\/self\/mem"/,
  );
});
