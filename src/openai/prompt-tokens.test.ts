import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  estimateChatTokens,
  estimateCompletionTokens,
  estimateTextTokens,
  renderChatPrompt,
} from './prompt-tokens.ts';
import { promptBlockHashes } from './prefix-hashes.ts';

test('text tokens are ceil(code points / 4)', () => {
  const cases: [string, number][] = [
    ['', 0],
    ['a', 1],
    ['abcd', 1],
    ['abcde', 2],
    ['😀😀😀😀', 1],
    ['x'.repeat(400), 100],
  ];
  for (const [text, tokens] of cases) assert.equal(estimateTextTokens(text), tokens, text);
});

test('a chat prompt adds 4 per message and 3 for the reply', () => {
  assert.equal(estimateChatTokens([{ role: 'user', content: 'abcdefgh' }]), 2 + 4 + 3);
  assert.equal(
    estimateChatTokens([
      { role: 'system', content: 'abcd' },
      { role: 'user', content: [{ type: 'text', text: 'abc' }], name: 'abcde' },
    ]),
    1 + 4 + (1 + 2 + 4) + 3,
  );
});

test('a text prompt is never below one token', () => {
  assert.equal(estimateCompletionTokens(''), 1);
  assert.equal(estimateCompletionTokens('abcdefghi'), 3);
});

test('prompts share block hashes exactly as far as they share full blocks', () => {
  const system = { role: 'system' as const, content: 'shared instructions '.repeat(20) };
  const a = [system, { role: 'user' as const, content: 'first question '.repeat(10) }];
  const b = [system, { role: 'user' as const, content: 'another one entirely '.repeat(10) }];
  const ha = promptBlockHashes(renderChatPrompt(a), estimateChatTokens(a), 16).hashes;
  const hb = promptBlockHashes(renderChatPrompt(b), estimateChatTokens(b), 16).hashes;
  // The shared system message spans 400+ characters: six full 64-character blocks.
  assert.ok(ha.length >= 6 && hb.length >= 6);
  assert.deepEqual(ha.slice(0, 6), hb.slice(0, 6));
  assert.notEqual(ha.at(-1), hb.at(-1));
  assert.equal(new Set(ha).size, ha.length, 'chained: equal blocks at different depths differ');
});

test('only full blocks within the estimated prompt are hashed', () => {
  assert.deepEqual(promptBlockHashes('x'.repeat(63), 16, 16).hashes, []);
  assert.equal(promptBlockHashes('x'.repeat(640), 100, 16).hashes.length, 6);
  assert.equal(promptBlockHashes('x'.repeat(640), 1000, 16).hashes.length, 10);
});
