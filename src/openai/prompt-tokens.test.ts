import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CHARS_PER_TOKEN,
  MAX_TOKEN_ID,
  estimateChatTokens,
  estimateCompletionTokens,
  estimateTextTokens,
  renderChatPrompt,
  renderCompletionPrompt,
} from './prompt-tokens.ts';
import { chatBlockHashes, completionBlockHashes, promptBlockHashes } from './prefix-hashes.ts';
import type { ChatMessage } from './chat-request.ts';

test("text tokens are its characters' weights by script, rounded up", () => {
  const cases: [string, number][] = [
    ['', 0],
    ['a', 1],
    ['abcd', 1],
    ['abcde', 2],
    ['x'.repeat(400), 100],
    // Greek, Cyrillic, accents and general punctuation weigh a Latin letter's: 4 a token.
    ['Привет, мир — αβγ é', 5],
    // Chinese, Japanese and Korean: 0.8 each (ten characters: 8 tokens).
    ['你好世界你好世界你好', 8],
    ['こんにちは。カタカナ', 8],
    ['안녕하세요안녕하세요', 8],
    // An emoji is a surrogate pair, one character: 3 tokens.
    ['😀😀😀😀', 12],
    // Arabic and Devanagari: ½ each.
    ['مرحبا', 3],
    ['नमस्ते', 3],
    // An ideograph beyond the basic plane (CJK extension B) weighs the others'.
    ['𠀀𠀀𠀀𠀀𠀀', 4],
    // A lone surrogate is a character of its own.
    ['\ud800', 1],
  ];
  for (const [text, tokens] of cases) assert.equal(estimateTextTokens(text), tokens, text);
});

test('a chat prompt adds 4 per message and 3 for the reply', () => {
  assert.equal(
    estimateChatTokens({ messages: [{ role: 'user', content: 'abcdefgh' }] }),
    2 + 4 + 3,
  );
  assert.equal(
    estimateChatTokens({
      messages: [
        { role: 'system', content: 'abcd' },
        { role: 'user', content: [{ type: 'text', text: 'abc' }], name: 'abcde' },
      ],
    }),
    1 + 4 + (1 + 2 + 4) + 3,
  );
});

test('a text prompt is never below one token; a token prompt counts its ids exactly', () => {
  const cases: [string | number[], number][] = [
    ['', 1],
    ['abcdefghi', 3],
    [[7], 1],
    [[1, 2, 3, 4, 5, 6, 7, 8, 9], 9],
    [Array.from({ length: 1000 }, (_, i) => i), 1000],
  ];
  for (const [prompt, tokens] of cases) assert.equal(estimateCompletionTokens(prompt), tokens);
});

test('token ids render as exactly CHARS_PER_TOKEN characters each, text as itself', () => {
  const cases: [string | number[], string][] = [
    ['as is', 'as is'],
    [[0], '0000'],
    [[5, 35, 36], '0005000z0010'],
    [[128000, MAX_TOKEN_ID], '2qrkzzzz'],
  ];
  for (const [prompt, text] of cases) assert.equal(renderCompletionPrompt(prompt), text);
  const ids = Array.from({ length: 100 }, (_, i) => i * 16_777);
  assert.equal(renderCompletionPrompt(ids).length, ids.length * CHARS_PER_TOKEN);
});

test('token prompts share block hashes exactly as far as they share whole blocks of ids', () => {
  const hashes = (ids: number[]) =>
    promptBlockHashes(renderCompletionPrompt(ids), estimateCompletionTokens(ids), 16).hashes;
  const shared = Array.from({ length: 40 }, (_, i) => 1000 + i);
  // 40 shared ids, then 24 that differ: blocks 0 and 1 (ids 0…31) match, block 2 does not.
  const a = hashes([...shared, ...Array.from({ length: 24 }, () => 7)]);
  const b = hashes([...shared, ...Array.from({ length: 24 }, () => 8)]);
  assert.equal(a.length, 4);
  assert.equal(b.length, 4);
  assert.deepEqual(a.slice(0, 2), b.slice(0, 2));
  assert.notEqual(a[2], b[2]);
  // One block per 16 ids, a partial block is not hashed.
  assert.equal(hashes(shared).length, 2);
  assert.equal(hashes(shared.slice(0, 15)).length, 0);
});

test('prompts share block hashes exactly as far as they share full blocks', () => {
  const system = { role: 'system' as const, content: 'shared instructions '.repeat(20) };
  const a = {
    messages: [system, { role: 'user' as const, content: 'first question '.repeat(10) }],
  };
  const b = {
    messages: [system, { role: 'user' as const, content: 'another one entirely '.repeat(10) }],
  };
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

test("a block holds its tokens by the estimate's weights, whatever the script", () => {
  // 16 tokens: 20 Chinese characters (0.8 each), where Latin text takes 64.
  const a = '你'.repeat(20) + '好'.repeat(20) + '世'.repeat(20);
  const b = '你'.repeat(20) + '好'.repeat(20) + '界'.repeat(20);
  const ha = promptBlockHashes(a, estimateTextTokens(a), 16).hashes;
  const hb = promptBlockHashes(b, estimateTextTokens(b), 16).hashes;
  assert.equal(ha.length, 3);
  assert.deepEqual(ha.slice(0, 2), hb.slice(0, 2));
  assert.notEqual(ha[2], hb[2]);
  // Emoji, 3 tokens each: the sixth passes 16, and the block closes after its pair, not inside.
  const emoji = '😀'.repeat(6);
  const [first] = promptBlockHashes(emoji + 'x', 100, 16).hashes;
  assert.equal(first, promptBlockHashes(emoji + 'y', 100, 16).hashes[0]);
  assert.notEqual(first, promptBlockHashes('😀'.repeat(5) + '😁', 100, 16).hashes[0]);
});

test('block hashes keep their values: KV events, traces and routers compare them', () => {
  const text = 'The quick brown fox jumps over the lazy dog. '.repeat(4);
  assert.deepEqual(promptBlockHashes(text, 100, 16).hashes, [
    'd7e74effdd8edc19',
    '287691f1940d59b5',
  ]);
  const ids = [0, 5, 128000, MAX_TOKEN_ID, ...Array.from({ length: 60 }, (_, i) => i * 977)];
  assert.deepEqual(completionBlockHashes(ids, 64, 16).hashes, [
    'bad1207eeec332bc',
    '2a9fa75f54d97e75',
    '21d86590a370f1a6',
    '3d46889fbf624e41',
  ]);
});

test('a chat or token prompt hashes as its rendering does, without building it', () => {
  const chats: ChatMessage[][] = [
    [{ role: 'user', content: 'hi' }],
    [
      { role: 'system', content: 'be brief. '.repeat(13) },
      {
        role: 'user',
        name: 'ada',
        content: [
          { type: 'text', text: 'part one ' },
          { type: 'text', text: 'x'.repeat(70) },
        ],
      },
      { role: 'assistant', content: null },
      { role: 'user', content: [] },
      { role: 'user', content: '😀'.repeat(50) },
    ] as ChatMessage[],
  ];
  for (const messages of chats) {
    const text = renderChatPrompt({ messages });
    // Every block size and token count, so block ends fall inside and between pieces.
    for (const blockTokens of [1, 3, 16]) {
      for (const tokens of [0, 5, estimateChatTokens({ messages }), 10_000]) {
        assert.deepEqual(
          chatBlockHashes({ messages }, tokens, blockTokens),
          promptBlockHashes(text, tokens, blockTokens),
        );
      }
    }
  }
  const ids = Array.from({ length: 203 }, (_, i) => (i * 16_777) % (MAX_TOKEN_ID + 1));
  for (const blockTokens of [1, 7, 16]) {
    for (const tokens of [3, 100, 203, 500]) {
      assert.deepEqual(
        completionBlockHashes(ids, tokens, blockTokens),
        promptBlockHashes(renderCompletionPrompt(ids), tokens, blockTokens),
      );
    }
  }
});

test("a cache_salt starts the chain: every block's hash is its own salt's, cut where it was", () => {
  const text = 'The quick brown fox jumps over the lazy dog. '.repeat(8);
  const ids = Array.from({ length: 64 }, (_, i) => i * 977);
  const chat: ChatMessage[] = [{ role: 'user', content: text }];
  for (const hashes of [
    (salt?: string) => promptBlockHashes(text, 80, 16, salt).hashes,
    (salt?: string) => completionBlockHashes(ids, 64, 16, salt).hashes,
    (salt?: string) => chatBlockHashes({ messages: chat }, 80, 16, salt).hashes,
  ]) {
    const plain = hashes();
    const a = hashes('tenant-a');
    assert.equal(a.length, plain.length, 'the same blocks');
    assert.ok(a.length >= 4);
    assert.ok(
      a.every((h, i) => h !== plain[i] && h !== hashes('tenant-b')[i]),
      'no block shared across salts',
    );
    assert.deepEqual(hashes('tenant-a'), a, 'the same salt, the same hashes');
    assert.deepEqual(hashes(undefined), plain);
  }
});
