// Tests for pieceBodies (staged-pieces.ts): a staged prompt's leading pieces, cut where the
// gateway's token estimate (4 Latin characters a token, 0.8 a Chinese one; 4 tokens a message, 3
// for the reply) reaches each piece's end, keeping only what shapes the prompt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pieceBodies } from './staged-pieces.ts';

const text = (n: number) => 'abcd'.repeat(n); // n tokens by the estimate

test('a chat prompt: the messages before each cut whole, the one it falls in cut, none after', () => {
  const body = {
    model: 'm',
    messages: [
      { role: 'system', content: text(96) }, // 100 tokens with its 4
      { role: 'user', content: text(1_000) },
    ],
    max_tokens: 500,
    stream: true,
    n: 1,
    response_format: { type: 'json_object' },
    logprobs: true,
    cache_salt: 'salt',
  };
  // 1,103 tokens in all; pieces of 256 after 7 expected cached: cuts at 263, 519, 775, 1,031.
  const pieces = pieceBodies('chat', body, {
    pieceTokens: 256,
    cachedTokens: 7,
    promptTokens: 1_103,
  });
  assert.equal(pieces.length, 4);
  const [first] = pieces;
  assert.deepEqual(Object.keys(first).sort(), [
    'cache_salt',
    'max_tokens',
    'messages',
    'model',
    'stream',
  ]);
  assert.equal(first.max_tokens, 1);
  assert.equal(first.stream, false);
  // 3 + 100 + 4 before the user's text: 263 − 107 = 156 tokens of it, 624 characters.
  const messages = first.messages as { content: string }[];
  assert.equal(messages.length, 2);
  assert.equal(messages[0].content, body.messages[0].content);
  assert.equal(messages[1].content, text(156));
  for (const [k, p] of pieces.entries()) {
    const user = (p.messages as { content: string }[])[1].content;
    assert.equal(user.length, (156 + 256 * k) * 4, `piece ${k + 1}`);
    assert.ok(body.messages[1].content.startsWith(user));
  }
});

test("a prompt in Chinese is cut at its characters' weight: 1.25 characters a token", () => {
  const body = { messages: [{ role: 'user', content: '你好世界'.repeat(500) }] }; // 1,607 tokens
  const pieces = pieceBodies('chat', body, {
    pieceTokens: 512,
    cachedTokens: 0,
    promptTokens: 1_607,
  });
  assert.equal(pieces.length, 3);
  for (const [k, p] of pieces.entries()) {
    // 512 × (k + 1) tokens less the 3 + 4 before the text, at 0.8 a character.
    const user = (p.messages as { content: string }[])[0].content;
    assert.equal(user.length, Math.floor(((512 * (k + 1) - 7) * 5) / 4), `piece ${k + 1}`);
  }
  const text = { prompt: 'ab😀'.repeat(300) }; // 1,050 tokens: 3.5 a repeat
  const [first] = pieceBodies('completion', text, {
    pieceTokens: 256,
    cachedTokens: 0,
    promptTokens: 1_050,
  });
  // 73 repeats weigh 255.5 tokens; the next 'a' and 'b' bring it to 256, and no pair is split.
  assert.equal(first.prompt, 'ab😀'.repeat(73) + 'ab');
});

test('content parts: the text cut where the piece ends, the parts after it dropped', () => {
  const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } };
  const body = {
    messages: [
      {
        role: 'user',
        content: [{ type: 'text', text: text(100) }, image, { type: 'text', text: text(900) }],
      },
    ],
  };
  const [first] = pieceBodies('chat', body, {
    pieceTokens: 512,
    cachedTokens: 0,
    promptTokens: 1_007,
  });
  const parts = (first.messages as { content: unknown[] }[])[0].content;
  // 512 − 3 − 4 = 505 tokens of text: the first part's 100 and 405 of the third's.
  assert.deepEqual(parts, [
    { type: 'text', text: text(100) },
    image,
    { type: 'text', text: text(405) },
  ]);
});

test('completions: text by the estimate, token ids exactly, a batch of prompts not at all', () => {
  const stage = { pieceTokens: 100, cachedTokens: 0, promptTokens: 250 };
  const byText = pieceBodies('completion', { prompt: text(250), echo: true }, stage);
  assert.deepEqual(
    byText.map((p) => (p.prompt as string).length),
    [400, 800],
  );
  assert.equal(byText[0].echo, undefined, 'a piece asks for nothing but its prompt');
  const ids = Array.from({ length: 250 }, (_, i) => i);
  const byIds = pieceBodies('completion', { prompt: ids }, stage);
  assert.deepEqual(byIds[1].prompt, ids.slice(0, 200));
  assert.deepEqual(pieceBodies('completion', { prompt: ['a', 'b'] }, stage), []);
  assert.deepEqual(
    pieceBodies('completion', { prompt: text(250), truncate_prompt_tokens: 100 }, stage),
    [],
  );
  assert.deepEqual(
    pieceBodies('completion', { prompt: text(250) }, { ...stage, cachedTokens: 200 }),
    [],
    'one piece left: the request itself',
  );
});
