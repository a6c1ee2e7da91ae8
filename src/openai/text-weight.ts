/**
 * What a text's characters weigh in tokens, by script, without a tokenizer. Measured with Llama
 * 3's tokenizer on the texts of bench/prompt-samples.ts (`node bench/prompt-estimate.ts`):
 *
 *   Latin, Greek, Cyrillic (code points to U+052F) and general punctuation     ¼  (4 a token)
 *   Chinese, Japanese and Korean: Hangul, CJK radicals to Yi, compatibility    0.8
 *     ideographs and forms, fullwidth forms, ideographs beyond the basic plane
 *   any other character of the basic plane: Arabic, Hebrew, Devanagari, Thai,  ½
 *     symbols
 *   any other beyond it: emoji                                                  3
 *
 * Four characters a token, OpenAI's rule of thumb, holds for Latin and Cyrillic text and code
 * (0.77–1.11 of Llama 3's count on those samples); Chinese, Japanese and Korean prompts ran 2.4
 * to 3.1 times over it, Hindi 2.1, emoji 1.6. Weights are whole twentieths of a token
 * (`UNITS_PER_TOKEN`), so sums are exact; a text in the first class alone weighs ¼ a UTF-16 unit,
 * and is measured without a walk over it.
 */

export const UNITS_PER_TOKEN = 20;
/** A Latin character's weight: 4 characters a token. */
export const LATIN_UNITS = 5;
const CJK_UNITS = 16;
const OTHER_UNITS = 10;
const ASTRAL_UNITS = 60;
/**
 * Hangul Jamo; CJK radicals and punctuation, kana, Bopomofo, CJK ideographs to Yi; Hangul
 * syllables; compatibility ideographs and forms; fullwidth forms.
 */
const CJK_RANGES = [
  [0x1100, 0x11ff],
  [0x2e80, 0xa4cf],
  [0xac00, 0xd7af],
  [0xf900, 0xfaff],
  [0xfe30, 0xfe4f],
  [0xff00, 0xffef],
] as const;

/** Characters of another weight than Latin's: a text without one is measured by its length. */
const HEAVY = /[\u0530-\u1fff\u2070-\uffff]/;

/** Whether every character of `text` weighs a Latin character's. */
export function isLatinText(text: string): boolean {
  return !HEAVY.test(text);
}

/** The weight of the character whose code point is `code`. */
export function charUnits(code: number): number {
  if (code <= 0xffff) return BASIC_UNITS[code];
  return code >= 0x20000 && code <= 0x3ffff ? CJK_UNITS : ASTRAL_UNITS;
}

/** Each character of the basic plane's weight, looked up rather than ranged per character. */
const BASIC_UNITS = (() => {
  const units = new Uint8Array(0x10000).fill(OTHER_UNITS);
  const set = (from: number, to: number, weight: number) => units.fill(weight, from, to + 1);
  set(0x0000, 0x052f, LATIN_UNITS);
  set(0x2000, 0x206f, LATIN_UNITS);
  for (const [from, to] of CJK_RANGES) set(from, to, CJK_UNITS);
  return units;
})();

/** The weight of `text`, a code point at a time (a surrogate pair is one). */
export function textUnits(text: string): number {
  if (isLatinText(text)) return LATIN_UNITS * text.length;
  let units = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.codePointAt(i) as number;
    if (code > 0xffff) i++;
    units += charUnits(code);
  }
  return units;
}

/**
 * The UTF-16 length of the longest start of `text` that weighs at most `units`: never inside a
 * surrogate pair.
 */
export function charsWithin(text: string, units: number): number {
  if (units <= 0) return 0;
  if (isLatinText(text)) return Math.min(text.length, Math.floor(units / LATIN_UNITS));
  let used = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.codePointAt(i) as number;
    used += charUnits(code);
    if (used > units) return i;
    if (code > 0xffff) i++;
  }
  return text.length;
}
