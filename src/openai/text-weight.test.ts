import { test } from 'node:test';
import assert from 'node:assert/strict';
import { charUnits, charsWithin, isLatinText, textUnits, UNITS_PER_TOKEN } from './text-weight.ts';

test('Latin, Greek and Cyrillic text and general punctuation are measured by their length', () => {
  assert.ok(isLatinText('Hello, world — “quoted” … Привет αβγ é'));
  for (const heavy of ['你', 'こ', '한', '😀', 'م', 'न', '✅'])
    assert.ok(!isLatinText(`a${heavy}`));
  assert.equal(textUnits('abcd'), UNITS_PER_TOKEN);
});

test('a text is cut at the characters its weight reaches, never inside a surrogate pair', () => {
  assert.equal(charsWithin('abcdefgh', 2 * UNITS_PER_TOKEN), 8);
  assert.equal(charsWithin('abcdefgh', UNITS_PER_TOKEN), 4);
  assert.equal(charsWithin('你好世界', 2 * UNITS_PER_TOKEN), 2); // 1.6 tokens; a third is 2.4
  assert.equal(charsWithin('a😀b', UNITS_PER_TOKEN), 1); // the emoji alone weighs 3
  assert.equal(charsWithin('a😀b', 4 * UNITS_PER_TOKEN), 4); // a, both halves of the pair, b
  assert.equal(charsWithin('😀', 2 * UNITS_PER_TOKEN), 0);
  assert.equal(charsWithin('abc', 0), 0);
  for (const text of ['abcdefgh', '你好世界', 'a😀b😀c', 'مرحبا بالعالم']) {
    for (let units = 0; units <= textUnits(text); units++) {
      const n = charsWithin(text, units);
      assert.ok(textUnits(text.slice(0, n)) <= units, `${text} ${units}`);
      const next = n + ((text.codePointAt(n) ?? 0) > 0xffff ? 2 : 1);
      assert.ok(n === text.length || textUnits(text.slice(0, next)) > units, `${text} ${units}`);
    }
  }
});

test('no character weighs more tokens than its UTF-8 bytes: a body bounds its prompt', () => {
  const bytes = (code: number) => (code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4);
  for (let code = 0; code <= 0x10ffff; code += code < 0x10000 ? 1 : 97) {
    assert.ok(charUnits(code) <= bytes(code) * UNITS_PER_TOKEN, code.toString(16));
  }
});
