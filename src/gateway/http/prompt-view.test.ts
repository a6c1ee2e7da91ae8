import assert from 'node:assert/strict';
import test from 'node:test';
import { PromptScale } from '../../core/estimate/prompt-scale.ts';
import { parseChatCompletionRequest, parseCompletionRequest } from '../../openai/index.ts';
import { parseImageTokens } from '../../openai/image-size.ts';
import { promptView } from './prompt-view.ts';

const CONTEXT = 8192;

/** A scale that has learned Latin prompts at `slope` per estimated token and 'other' as is. */
function learned(slope: number): PromptScale {
  const scale = new PromptScale();
  for (let i = 0; i < 100; i++) {
    const x = 100 + i * 37;
    scale.observe('latin', x, Math.round(slope * x));
    scale.observe('other', x, x);
  }
  return scale;
}

const chat = (content: string, extra: object = {}) =>
  parseChatCompletionRequest({ model: 'm', messages: [{ role: 'user', content }], ...extra });

test('a text prompt is planned as its backends count such prompts; its blocks are the estimate’s', () => {
  const req = chat('All work and no play makes Jack a dull boy. '.repeat(100));
  const plain = promptView('chat', req, CONTEXT);
  const scaled = promptView('chat', req, CONTEXT, undefined, learned(0.5));
  assert.equal(plain.estimate?.tokens, plain.inputTokens);
  assert.deepEqual(scaled.estimate, { tokens: plain.inputTokens, script: 'latin', imageTokens: 0 });
  assert.equal(scaled.inputTokens, Math.ceil(0.5 * plain.inputTokens));
  // The same blocks, each standing for half as many of the plan's tokens.
  assert.deepEqual(scaled.prefix?.hashes, plain.prefix?.hashes);
  assert.equal(plain.prefix?.blockTokens, 16);
  assert.ok(Math.abs((scaled.prefix?.blockTokens ?? 0) - 8) < 0.01);
});

test('a prompt with images has its text planned by the line, and its images as they are', () => {
  const text = 'All work and no play makes Jack a dull boy. '.repeat(100);
  const req = parseChatCompletionRequest({
    model: 'm',
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
        ],
      },
    ],
  });
  const llava = parseImageTokens('576');
  const plain = promptView('chat', req, CONTEXT, llava);
  const scaled = promptView('chat', req, CONTEXT, llava, learned(0.5));
  assert.deepEqual(scaled.estimate, {
    tokens: plain.inputTokens,
    script: 'latin',
    imageTokens: 576,
  });
  assert.equal(scaled.inputTokens, Math.ceil(0.5 * (plain.inputTokens - 576)) + 576);
});

test('a prompt in another script is planned by that script’s line', () => {
  const req = chat('清晨的阳光洒在湖面上，'.repeat(50));
  const view = promptView('chat', req, CONTEXT, undefined, learned(0.5));
  assert.equal(view.estimate?.script, 'other');
  assert.equal(view.inputTokens, view.estimate?.tokens);
});

test('what is not an estimate of the whole text is planned as it was: token ids, a cut prompt', () => {
  const scale = learned(0.5);
  const ids = parseCompletionRequest({ model: 'm', prompt: Array.from({ length: 300 }, () => 7) });
  const counted = promptView('completion', ids, CONTEXT, undefined, scale);
  assert.deepEqual([counted.inputTokens, counted.estimate], [300, undefined]);
  const cut = chat('word '.repeat(4000), { truncate_prompt_tokens: 100 });
  const kept = promptView('chat', cut, CONTEXT, undefined, scale);
  assert.deepEqual([kept.inputTokens, kept.estimate], [100, undefined]);
  const text = parseCompletionRequest({ model: 'm', prompt: 'word '.repeat(400) });
  assert.equal(promptView('completion', text, CONTEXT, undefined, scale).inputTokens, 250);
});

test('a plan is never past the context, where the backend holds the prompt', () => {
  const long = chat('x'.repeat(20_000));
  assert.equal(promptView('chat', long, CONTEXT).inputTokens, 5007);
  assert.equal(promptView('chat', long, CONTEXT, undefined, learned(4)).inputTokens, CONTEXT - 1);
});
