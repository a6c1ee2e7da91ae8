import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseChatCompletionRequest, type ChatCompletionRequest } from './chat-request.ts';
import {
  MAX_IMAGES,
  imagePart,
  imagesSizable,
  inputImagePart,
  isImagePart,
  isInputImagePart,
} from './image-parts.ts';
import { chatPromptSize } from './prompt-size.ts';
import { estimateChatTokens } from './prompt-tokens.ts';
import { asChatRequest, parseResponsesRequest } from './responses-request.ts';
import { rejection } from './openai-test-kit.ts';
import { parseImageTokens } from './image-size.ts';

const PNG =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const image = (url: string, detail?: string) => ({
  type: 'image_url',
  image_url: detail === undefined ? { url } : { url, detail },
});
const asking = (...parts: object[]) =>
  parseChatCompletionRequest({
    model: 'm',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in it?' }, ...parts] }],
  });

test("a user's message takes images as OpenAI's chat does: fetched by URL or inline, kept as sent", () => {
  const parts = [image('https://example.com/cat.png', 'low'), image(PNG)];
  const req = asking(...parts);
  assert.deepEqual(req.messages[0].content, [{ type: 'text', text: 'What is in it?' }, ...parts]);
});

test('an image asked wrongly is a 400 naming the part and the field', () => {
  const cases: [object, string][] = [
    [
      image('ftp://example.com/cat.png'),
      'messages[0].content[1].image_url.url: expected an http(s) URL or a data:image/…;base64, URL, got "ftp://example.com/cat.png"',
    ],
    [
      image('data:text/plain;base64,aGk='),
      'messages[0].content[1].image_url.url: expected an http(s) URL or a data:image/…;base64, URL, got "data:text/plain;base64,aGk="',
    ],
    [
      image(PNG, 'max'),
      'messages[0].content[1].image_url.detail: expected auto, low, high, got "max"',
    ],
    [
      { type: 'image_url', image_url: { url: PNG, uuid: 'x' } },
      'messages[0].content[1].image_url.uuid: unknown field',
    ],
    [
      { type: 'image_url', image_url: 'https://example.com/cat.png' },
      'messages[0].content[1].image_url: expected an object ({"url": "…"}), got "https://example.com/cat.png"',
    ],
    [
      { type: 'input_audio', input_audio: { data: 'x', format: 'wav' } },
      'messages[0].content[1].type: expected "text" or "image_url", got "input_audio"',
    ],
  ];
  for (const [part, message] of cases) {
    assert.equal(rejection(() => asking(part)).message, message);
  }
  const onSystem = rejection(() =>
    parseChatCompletionRequest({
      model: 'm',
      messages: [{ role: 'system', content: [image(PNG)] }],
    }),
  );
  assert.equal(
    onSystem.message,
    `messages[0].content[0].type: expected text on a system message (an image is a user's, as OpenAI takes it), got "image_url"`,
  );
});

test("an image is the served model's tokens per image, hashed by what it shows", () => {
  const TOKENS = 576;
  const cat = asking(image('https://example.com/cat.png'));
  const dog = asking(image('https://example.com/dog.png'));
  const text = asking();
  const sized = (req: ChatCompletionRequest) => chatPromptSize(req, 8192, parseImageTokens('576'));
  assert.equal(sized(cat).tokens, sized(text).tokens + TOKENS);
  assert.equal(estimateChatTokens(cat), estimateChatTokens(text), 'none known, none counted');
  assert.equal(sized(cat).atLeast, sized(text).atLeast, 'no bound: the figure is the operator’s');
  const hashes = (req: ChatCompletionRequest) => sized(req).hashes(sized(req).tokens, 16).hashes;
  assert.deepEqual(hashes(cat), hashes(asking(image('https://example.com/cat.png'))));
  const [c, d] = [hashes(cat), hashes(dog)];
  assert.equal(c.length, d.length);
  assert.ok(c.length >= 36, `${c.length} blocks`);
  // The text before the image is one block's worth at most: every later block tells them apart.
  assert.ok(c.slice(1).every((h, i) => h !== d[i + 1]));
});

test('an image no one said the size of is refused, naming the first', () => {
  const two = asking(image(PNG), image(PNG));
  assert.doesNotThrow(() =>
    imagesSizable(two.messages, parseImageTokens('576'), 'messages', 'this gateway'),
  );
  const e = rejection(() => imagesSizable(two.messages, undefined, 'messages', 'this gateway'));
  assert.equal(e.param, 'messages[0].content[1]');
  assert.match(e.message, /^messages\[0\]\.content\[1\]: an image, which this gateway cannot size/);
  assert.doesNotThrow(() => imagesSizable(asking().messages, undefined, 'messages', 'x'));
});

test("the Responses API's input_image is chat's image_url; a stored file or a tool's image is refused", () => {
  const responses = parseResponsesRequest({
    model: 'm',
    input: [
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'What is it?' },
          { type: 'input_image', image_url: PNG, detail: 'high' },
        ],
      },
    ],
  });
  const e = rejection(() => imagesSizable(responses.input, undefined, 'input', 'this gateway'));
  assert.equal(e.param, 'input[0].content[1]');
  assert.deepEqual(asChatRequest(responses).messages[0].content, [
    { type: 'text', text: 'What is it?' },
    { type: 'image_url', image_url: { url: PNG, detail: 'high' } },
  ]);
  const refused = (item: object) =>
    rejection(() => parseResponsesRequest({ model: 'm', input: [item] })).message;
  assert.equal(
    refused({
      role: 'user',
      content: [{ type: 'input_image', image_url: PNG, file_id: 'file_1' }],
    }),
    'input[0].content[0].file_id: not supported by this server (expected absent), got "file_1"',
  );
  assert.match(
    refused({ role: 'assistant', content: [{ type: 'input_image', image_url: PNG }] }),
    /^input\[0\]\.content\[0\]\.type: expected text in a message not the user's/,
  );
  assert.match(
    refused({
      type: 'function_call_output',
      call_id: 'c1',
      output: [{ type: 'input_image', image_url: PNG }],
    }),
    /^input\[0\]\.output\[0\]\.type: expected text in a tool's output/,
  );
  assert.match(
    refused({ role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] }),
    /^input\[0\]\.content\[0\]\.type: expected a text part .* or an image \(input_image\); files and audio are not modelled/,
  );
});

test('the plain tests of an image take exactly what its schema takes', () => {
  const url = 'https://example.com/cat.png';
  const chat = [
    image(url),
    image(PNG, 'high'),
    { type: 'image_url', image_url: { url, detail: null } },
    { type: 'image_url', image_url: { url, detail: 'max' } },
    { type: 'image_url', image_url: { url, uuid: 'x' } },
    { type: 'image_url', image_url: { detail: 'low' } },
    { type: 'image_url', image_url: url },
    { type: 'image_url', image_url: { url }, extra: 1 },
    { type: 'image_url', image_url: { url: 'ftp://x' } },
    { type: 'image_url', image_url: { url: 'https://\ud800' } },
    { type: 'text', text: 'x' },
  ];
  for (const part of chat) {
    assert.equal(isImagePart(part), imagePart.safeParse(part).success, JSON.stringify(part));
  }
  const responses = [
    { type: 'input_image', image_url: url },
    { type: 'input_image', image_url: PNG, detail: 'auto' },
    { type: 'input_image', image_url: url, detail: null, file_id: null },
    { type: 'input_image', image_url: url, file_id: 'file_1' },
    { type: 'input_image', image_url: url, detail: 'max' },
    { type: 'input_image', image_url: url, extra: 1 },
    { type: 'input_image', file_id: 'file_1' },
    { type: 'input_image', image_url: 'data:text/plain;base64,aGk=' },
  ];
  for (const part of responses) {
    const judged = inputImagePart.safeParse(part).success;
    assert.equal(isInputImagePart(part), judged, JSON.stringify(part));
  }
});

test(`a request of more than ${MAX_IMAGES} images is refused at the first past them`, () => {
  const many = Array.from({ length: MAX_IMAGES + 1 }, () => image('https://example.com/a.png'));
  assert.equal(
    rejection(() => asking(...many)).message,
    `messages[0].content[${MAX_IMAGES + 1}]: at most ${MAX_IMAGES} images in a request, as OpenAI takes them`,
  );
  assert.doesNotThrow(() => asking(...many.slice(1)));
  const input = [
    {
      role: 'user',
      content: Array.from({ length: MAX_IMAGES + 1 }, () => ({
        type: 'input_image',
        image_url: 'https://example.com/a.png',
      })),
    },
  ];
  assert.equal(
    rejection(() => parseResponsesRequest({ model: 'm', input })).message,
    `input[0].content[${MAX_IMAGES}]: at most ${MAX_IMAGES} images in a request, as OpenAI takes them`,
  );
});
