import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isOpenAiError } from './errors.ts';
import { decodeUtf8, firstInvalidByte } from './utf8-text.ts';

const bytes = (...b: number[]) => new Uint8Array(b);
const utf8 = (s: string) => new TextEncoder().encode(s);

test('valid UTF-8 decodes as is', () => {
  for (const s of ['', '{"a":"é"}', '€ 😀 \u{10ffff}']) assert.equal(decodeUtf8(utf8(s)), s);
});

test('invalid bytes are a 400 naming the offset where the bad sequence starts', () => {
  const prefix = [...utf8('{"é":"')]; // 7 bytes: é takes two
  const cases: [string, number[], number][] = [
    ['a stray continuation byte', [0x80], 7],
    ['a lead byte never used (C0, overlong)', [0xc0, 0xaf], 7],
    ['an overlong 3-byte form', [0xe0, 0x80, 0xaf], 7],
    ['an encoded surrogate (CESU-8)', [0xed, 0xa0, 0x80], 7],
    ['past U+10FFFF', [0xf4, 0x90, 0x80, 0x80], 7],
    ['a sequence cut by the end', [0x41, 0xe2, 0x82], 8],
    ['a sequence cut by ASCII', [0xe2, 0x41, 0x41], 7],
    ['0xFF', [0x41, 0x42, 0xff], 9],
  ];
  for (const [name, tail, offset] of cases) {
    const input = bytes(...prefix, ...tail);
    assert.equal(firstInvalidByte(input), offset, name);
    try {
      decodeUtf8(input);
      assert.fail(`${name}: expected a rejection`);
    } catch (e) {
      assert.ok(isOpenAiError(e), String(e));
      assert.equal(e.status, 400);
      assert.equal(
        e.message,
        `request body: expected UTF-8 text, got invalid bytes at offset ${offset}`,
        name,
      );
    }
  }
});

test('the offset search agrees with the decoder on well-formed text', () => {
  const text = utf8('ascii é € 😀 \u{10ffff}');
  assert.equal(firstInvalidByte(text), text.length);
});
