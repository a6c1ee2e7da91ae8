import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fillerPiece } from './filler-text.ts';
import { keptPiece, stopCut, stopStrings } from './stop-strings.ts';

// The filler reads: "the quick model serves tokens under its latency objectives while …".
const text = (cut: ReturnType<typeof stopCut>, tokens: number) => {
  let chars = 0;
  let out = '';
  for (let i = 0; i < tokens; i++) {
    out += keptPiece(fillerPiece(i), chars, cut);
    chars += fillerPiece(i).length;
  }
  return out;
};

test('the token that completes a stop string is the last; the text ends where the string begins', () => {
  const cut = stopCut(['model'], 100);
  assert.deepEqual(cut, { tokens: 3, chars: 10 });
  assert.equal(text(cut, 3), 'the quick ');
  // Kept in the output when asked (include_stop_str_in_output).
  const kept = stopCut(['model'], 100, { keep: true });
  assert.equal(text(kept, kept?.tokens ?? 0), 'the quick model');
});

test('a string across tokens, the earliest of several, none before min_tokens, none past the limit', () => {
  assert.deepEqual(stopCut(['quick model'], 100), { tokens: 3, chars: 4 });
  assert.deepEqual(stopCut(['tokens', 'serves'], 100), { tokens: 4, chars: 16 });
  // The filler repeats every 16 words: past min_tokens, the next "model" is word 19's.
  assert.equal(stopCut(['model'], 100, { minTokens: 5 })?.tokens, 19);
  assert.equal(stopCut(['model'], 2), undefined);
  assert.equal(stopCut(['zebra'], 10_000), undefined);
  assert.deepEqual(stopStrings(null), []);
  assert.deepEqual(stopStrings(['', 'a']), ['a']);
  assert.deepEqual(stopStrings('a'), ['a']);
});
