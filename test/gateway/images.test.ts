// Images through `goodput serve`, as the official `openai` client sends them: a user's message
// carries an image (a URL, or its bytes inline), which goes upstream as sent while admission
// plans it as the served model's tokens per image (--image-tokens), and what the backend counted
// is set against that plan (goodput_prompt_tokens_counted_ratio); a gateway not told that
// refuses it by name, counted and findable by its id, and a body of thousands of tiny images is
// refused at the first past 500. On the embedded fleet and `goodput engine` an image is prompt
// like any other, its blocks served from the prefix cache when it is sent again; the Responses
// API's input_image is the same image, kept with its conversation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type OpenAI from 'openai';
import { Registry } from 'prom-client';
import type { CompletionsDeps } from '../../src/gateway/http/completions.ts';
import { continued, keeper } from '../../src/gateway/http/kept-responses.ts';
import { readRequest } from '../../src/gateway/http/read-request.ts';
import { MemoryStore } from '../../src/gateway/shared/memory-store.ts';
import { StateMetrics } from '../../src/gateway/state-metrics.ts';
import { wallClock } from '../../src/runtime/wall-clock.ts';
import { MODEL, engines, gateway, metricValue } from './gateway-kit.ts';
import { fakeVllm } from './fake-vllm.ts';
import { solidPng } from './solid-png.ts';
import { serveRefuses, startServe } from './process-kit.ts';
import { parseImageTokens, type ImageTokens } from '../../src/openai/image-size.ts';

/** LLaVA-1.5's image, and Gemma 3's. */
const LLAVA = parseImageTokens('576');
const GEMMA = parseImageTokens('256');

const ADMIN = 'images-admin';
const PNG =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
/** A user's question about the image at `url`. */
const pictureQuestion = (
  url: string,
  detail?: 'low' | 'high' | 'auto',
): OpenAI.ChatCompletionMessageParam[] => [
  {
    role: 'user',
    content: [
      { type: 'text', text: 'What is in this picture?' },
      { type: 'image_url', image_url: detail === undefined ? { url } : { url, detail } },
    ],
  },
];
const MESSAGES = pictureQuestion(PNG, 'low');

/** The prompt tokens admission planned for request `id`, from its decision record. */
async function plannedPrompt(url: string, id: string): Promise<number> {
  const res = await fetch(`${url}/admin/decisions/${id}`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  assert.equal(res.status, 200, `no decision record for ${id}`);
  return ((await res.json()) as { demand: { input_tokens: number } }).demand.input_tokens;
}

test('an image goes upstream as sent, planned as the tokens --image-tokens says one takes', async () => {
  const [plain, told] = [await fakeVllm(), await fakeVllm()];
  const text = await gateway([plain], 'goodput', { adminToken: ADMIN, imageTokens: LLAVA });
  const images = await gateway([told], 'goodput', { adminToken: ADMIN, imageTokens: LLAVA });
  const words = await text.client.chat.completions
    .create({ model: MODEL, messages: [{ role: 'user', content: 'What is in this picture?' }] })
    .withResponse();
  const seen = await images.client.chat.completions
    .create({ model: MODEL, messages: MESSAGES })
    .withResponse();
  assert.equal(seen.data.choices[0].finish_reason, 'stop');
  const sent = told.bodies.at(-1) as { messages: unknown };
  assert.deepEqual(sent.messages, MESSAGES, 'the image upstream as the client sent it');
  const id = (r: { response: Response }) => r.response.headers.get('x-goodput-request-id') ?? '';
  const planned = await plannedPrompt(images.url, id(seen));
  assert.equal(planned, (await plannedPrompt(text.url, id(words))) + 576);
  // What the backend counted (this one says 9 for any prompt) over what admission planned.
  const ratio = (front: { url: string }, series: string, held: string) =>
    metricValue(front.url, `goodput_prompt_tokens_counted_ratio_${series}`, { images: held });
  assert.equal(await ratio(images, 'count', 'yes'), 1);
  assert.ok(Math.abs((await ratio(images, 'sum', 'yes')) - 9 / planned) < 1e-9);
  assert.equal(await ratio(text, 'count', 'no'), 1);
});

test('pixtral, mistral3 and internvl: a screenshot inline is planned as the engine counts it', async () => {
  const shot = solidPng(1920, 1080);
  const question: OpenAI.ChatCompletionMessageParam[] = [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is on this screen?' },
        { type: 'image_url', image_url: { url: shot } },
      ],
    },
  ];
  for (const [rule, imageTokens] of [
    ['pixtral', 64 * 36 + 36],
    ['mistral3', 55 * 31 + 31],
    ['internvl', 9 * 256 + 2],
  ] as const) {
    const sizes = parseImageTokens(rule);
    const [engine] = await engines(1, { imageTokens: sizes });
    const front = await gateway([engine], 'goodput', { adminToken: ADMIN, imageTokens: sizes });
    const res = await front.client.chat.completions
      .create({ model: MODEL, max_tokens: 2, messages: question })
      .withResponse();
    const id = res.response.headers.get('x-goodput-request-id') ?? '';
    const counted = res.data.usage?.prompt_tokens ?? 0;
    assert.equal(await plannedPrompt(front.url, id), counted, rule);
    const text = await front.client.chat.completions.create({
      model: MODEL,
      max_tokens: 2,
      messages: [{ role: 'user', content: 'What is on this screen?' }],
    });
    assert.equal(counted - (text.usage?.prompt_tokens ?? 0), imageTokens, rule);
  }
});

test('a hostile body of 4 MiB of tiny images is refused by name at the 501st, and the gateway serves on', async () => {
  const front = await gateway([await fakeVllm()], 'goodput', { imageTokens: LLAVA });
  const tiny = { type: 'image_url', image_url: { url: 'http://a' } };
  const res = await fetch(`${front.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: MODEL,
      messages: [{ role: 'user', content: Array<object>(80_000).fill(tiny) }],
    }),
  });
  const { error } = (await res.json()) as { error: { message: string } };
  assert.equal(res.status, 400);
  assert.equal(
    error.message,
    'messages[0].content[500]: at most 500 images in a request, as OpenAI takes them',
  );
  const served = await front.client.chat.completions.create({ model: MODEL, messages: MESSAGES });
  assert.equal(served.choices[0].finish_reason, 'stop');
});

test('a gateway not told what an image takes refuses one by name, counted and findable by its id', async () => {
  const front = await gateway([await fakeVllm()], 'goodput', { adminToken: ADMIN });
  const refused = await front.client.chat.completions
    .create({ model: MODEL, messages: MESSAGES })
    .then(
      () => assert.fail('served'),
      (e: { status: number; message: string; headers: Headers }) => e,
    );
  assert.equal(refused.status, 400);
  assert.match(
    refused.message,
    /^400 messages\[0\]\.content\[1\]: an image, which this gateway cannot size: it was not started with --image-tokens/,
  );
  const id = refused.headers.get('x-goodput-request-id') ?? '';
  assert.ok(id !== '', 'findable by its id');
  const record = await fetch(`${front.url}/admin/decisions/${id}`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  assert.equal(record.status, 200);
  assert.equal(await metricValue(front.url, 'goodput_invalid_requests_total'), 1);
  await assert.rejects(
    front.client.responses.create({
      model: MODEL,
      input: [{ role: 'user', content: [{ type: 'input_image', image_url: PNG, detail: 'auto' }] }],
    }),
    /400 input\[0\]\.content\[0\]: an image, which this gateway cannot size/,
  );
});

test('goodput engine with --image-tokens: an image is prompt, sized as the gateway sizes it', async () => {
  const [told] = await engines(1, { imageTokens: GEMMA });
  const [plain] = await engines(1);
  const front = await gateway([told], 'goodput', { imageTokens: GEMMA });
  const asked = { model: MODEL, messages: MESSAGES, max_tokens: 2 };
  const words = {
    ...asked,
    messages: [{ role: 'user' as const, content: 'What is in this picture?' }],
  };
  const [seen, read] = [
    await front.client.chat.completions.create(asked),
    await front.client.chat.completions.create(words),
  ];
  assert.equal(seen.usage?.prompt_tokens, (read.usage?.prompt_tokens ?? 0) + 256);
  // The engine counts a prompt as the gateway estimates it: every ratio is 1.
  for (const held of ['yes', 'no']) {
    const series = (name: string) =>
      metricValue(front.url, `goodput_prompt_tokens_counted_ratio_${name}`, { images: held });
    assert.deepEqual([await series('count'), await series('sum')], [1, 1], held);
  }
  const res = await fetch(`${plain.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(asked),
  });
  const { error } = (await res.json()) as { error: { message: string; param: string } };
  assert.equal(res.status, 400);
  assert.equal(error.param, 'messages[0].content[1]');
  assert.match(error.message, /an image, which the simulated engine cannot size/);
});

// 1,920 × 1,080 and 224 × 224 in each rule's squares, and the two markers: Qwen2-VL's 28 pixels
// (39 × 69; 8 × 8), Qwen3-VL's 32 (34 × 60; 7 × 7, raised to its 256 × 256 least).
for (const [rule, screenshotTokens, thumbnailTokens] of [
  ['qwen2-vl', 39 * 69 + 2, 8 * 8 + 2],
  ['qwen3-vl', 34 * 60 + 2, 8 * 8 + 2],
] as const) {
  test(`--image-tokens ${rule}: each image is the tokens its size makes, at the gateway and the engine alike`, async () => {
    const qwen = parseImageTokens(`${rule}:url_tokens=1000`);
    const [engine] = await engines(1, { imageTokens: qwen });
    const front = await gateway([engine], 'goodput', { adminToken: ADMIN, imageTokens: qwen });
    const ask = async (content: OpenAI.ChatCompletionContentPart[]) => {
      const res = await front.client.chat.completions
        .create({ model: MODEL, messages: [{ role: 'user', content }], max_tokens: 2 })
        .withResponse();
      const id = res.response.headers.get('x-goodput-request-id') ?? '';
      return {
        counted: res.data.usage?.prompt_tokens ?? 0,
        planned: await plannedPrompt(front.url, id),
      };
    };
    const question = { type: 'text' as const, text: 'What is in this picture?' };
    const image = (url: string) => ({ type: 'image_url' as const, image_url: { url } });
    const words = await ask([question]);
    const screenshot = await ask([question, image(solidPng(1920, 1080))]);
    const both = await ask([
      question,
      image(solidPng(224, 224)),
      image('https://example.com/a.png'),
    ]);
    // By URL, the size the gateway cannot read: url_tokens.
    assert.equal(screenshot.planned - words.planned, screenshotTokens);
    assert.equal(both.planned - words.planned, thumbnailTokens + 1000);
    // The engine plays the model: it counts each image as the gateway planned it.
    for (const r of [words, screenshot, both]) assert.equal(r.counted, r.planned);
  });
}

test('--image-tokens qwen2-vl: screenshots past the context are refused at the door, by the size they are sure to be', async () => {
  const qwen = parseImageTokens('qwen2-vl:url_tokens=1000');
  const [engine] = await engines(1, { imageTokens: qwen });
  const front = await gateway([engine], 'goodput', { imageTokens: qwen });
  const shots = (url: string) => [
    { type: 'text', text: 'Which of these dashboards shows the failed backup?' },
    ...Array.from({ length: 4 }, () => ({ type: 'image_url', image_url: { url } })),
  ];
  const ask = (url: string) =>
    fetch(`${front.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: shots(url) }] }),
    });
  // Four 1,920 × 1,080 screenshots: 4 × 2,693 tokens and the text's, past llama-3-8b's 8,192.
  const res = await ask(solidPng(1920, 1080));
  const { error } = (await res.json()) as { error: { message: string; code: string } };
  assert.equal(res.status, 400);
  assert.equal(error.code, 'context_length_exceeded');
  assert.match(
    error.message,
    /This model's maximum context length is 8192 tokens: the prompt \(at least 1077\d tokens\) exceeds it/,
  );
  assert.ok(res.headers.get('x-goodput-request-id'));
  // By URL their size is unknown: sure to be only the fewest an image takes, so they go on,
  // planned as url_tokens each.
  const byUrl = await ask('https://example.com/dashboard.png');
  assert.equal(byUrl.status, 200, await byUrl.text());
});

test('goodput serve --image-tokens: an image sent again is served from the prefix cache, kept with its conversation, and a photo inline fits --max-body-mib', async () => {
  const gw = await startServe(['--image-tokens', '576', '--replicas', '1', '--max-body-mib', '8']);
  const ask = async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'llama-3-8b', messages: MESSAGES, max_tokens: 2 }),
    });
    type Usage = { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
    return ((await res.json()) as { usage: Usage }).usage;
  };
  const first = await ask();
  assert.ok(first.prompt_tokens > 576, `${first.prompt_tokens} prompt tokens`);
  assert.equal(first.prompt_tokens_details.cached_tokens, 0);
  assert.ok((await ask()).prompt_tokens_details.cached_tokens >= 576, 'the image, cached');
  // The Responses API: the image, then a next turn that names its response and sends only text.
  const post = async (body: object) =>
    (await (
      await fetch(`${gw.url}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'llama-3-8b', max_output_tokens: 2, ...body }),
      })
    ).json()) as { id: string; usage: { input_tokens: number } };
  const turn = await post({
    input: [{ role: 'user', content: [{ type: 'input_image', image_url: PNG, detail: 'auto' }] }],
  });
  const next = await post({ input: 'And its colour?', previous_response_id: turn.id });
  assert.ok(next.usage.input_tokens > turn.usage.input_tokens, 'the image is in its history');
  const items = (await (await fetch(`${gw.url}/v1/responses/${turn.id}/input_items`)).json()) as {
    data: { content: { type: string }[] }[];
  };
  assert.deepEqual(
    items.data[0].content.map((p) => p.type),
    ['input_image'],
  );
  // A photo inline, past the default 4 MiB body and under the 8 MiB it was started with.
  const photo = `data:image/jpeg;base64,${Buffer.alloc(4 * 1024 * 1024, 7).toString('base64')}`;
  const large = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'llama-3-8b',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: photo } }] }],
      max_tokens: 2,
    }),
  });
  assert.equal(large.status, 200, await large.clone().text());
  gw.proc.child.kill('SIGTERM');
  assert.deepEqual(await gw.proc.exited, { code: 0, signal: null }, gw.proc.output());
  await serveRefuses([
    [
      '--image-tokens',
      '0',
      'an integer ≥ 1, or qwen2-vl, qwen3-vl, pixtral, mistral3, internvl\\S+',
    ],
    [
      '--image-tokens',
      'many',
      'an integer ≥ 1, or qwen2-vl, qwen3-vl, pixtral, mistral3, internvl\\S+',
    ],
    ['--image-tokens', 'qwen2-vl:max_pixels=0', 'min_pixels and max_pixels ≥ 1'],
    ['--max-body-mib', '0', 'a number > 0'],
  ]);
});

test('a kept conversation with an image, continued on a gateway not told what one takes: a 400 naming previous_response_id', async () => {
  const store = new MemoryStore({ clock: wallClock });
  const metrics = { state: new StateMetrics(new Registry()) };
  const deps = (imageTokens?: ImageTokens) =>
    ({
      servedModels: [MODEL],
      fillerReplies: false,
      store,
      keepResponses: true,
      metrics,
      imageTokens,
    }) as unknown as CompletionsDeps;
  const first = JSON.stringify({
    model: MODEL,
    input: [{ role: 'user', content: [{ type: 'input_image', image_url: PNG, detail: 'auto' }] }],
  });
  const keep = keeper(
    readRequest('responses', first, deps(LLAVA)),
    { id: 'r1', tenant: 't' },
    deps(LLAVA),
  );
  await keep?.({ id: 'resp_r1', status: 'completed', output: [] });
  const next = JSON.stringify({
    model: MODEL,
    input: 'And its colour?',
    previous_response_id: 'resp_r1',
  });
  const told = await continued(readRequest('responses', next, deps(LLAVA)), 't', deps(LLAVA));
  assert.ok(told.history !== undefined, 'continued where images are sized');
  await assert.rejects(
    continued(readRequest('responses', next, deps()), 't', deps()),
    /^OpenAiError: previous_response_id: the conversation of "resp_r1" holds an image, which this gateway cannot size/,
  );
});

test('goodput serve --image-tokens qwen2-vl says when images by URL are planned at the most one can take', async () => {
  const planned = async (flag: string) => {
    const gw = await startServe(['--replicas', '1', '--image-tokens', flag]);
    gw.proc.child.kill('SIGTERM');
    await gw.proc.exited;
    return gw.proc.jsonLines().find((l) => typeof l.url_tokens === 'number');
  };
  const most = await planned('qwen2-vl');
  assert.equal(most?.url_tokens, 16_386);
  assert.match(
    String(most?.msg),
    /images by URL are planned at 16386 tokens each, the most one can take/,
  );
  assert.equal(
    await planned('qwen2-vl:url_tokens=1200'),
    undefined,
    'told what they take: nothing to say',
  );
});

test('--image-tokens qwen2-vl: what images by URL take is learned from the backend’s counts, after 20', async () => {
  // The backend's model makes each image by URL 900 tokens; the gateway starts from the most one
  // can take.
  const [engine] = await engines(1, { imageTokens: parseImageTokens('qwen2-vl:url_tokens=900') });
  const front = await gateway([engine], 'goodput', {
    adminToken: ADMIN,
    imageTokens: parseImageTokens('qwen2-vl'),
  });
  const ask = async (i: number) => {
    const res = await front.client.chat.completions
      .create({
        model: MODEL,
        max_tokens: 2,
        messages: pictureQuestion(`https://example.com/shots/${i}.png`),
      })
      .withResponse();
    const id = res.response.headers.get('x-goodput-request-id') ?? '';
    return { planned: await plannedPrompt(front.url, id), counted: res.data.usage?.prompt_tokens };
  };
  const perImage = () => metricValue(front.url, 'goodput_url_image_planned_tokens');
  const first = await ask(0);
  assert.equal(await perImage(), 16_386);
  assert.equal(first.planned, 8191, 'planned past the context, held just under it');
  for (let i = 1; i < 20; i++) await ask(i);
  assert.equal(await perImage(), 900);
  const later = await ask(20);
  assert.equal(later.planned, later.counted, 'planned at what it takes');
  assert.equal(later.counted, first.counted);
});

test('--image-tokens qwen2-vl: an inline image whose header claims a side of 0 is planned as one it cannot read, not as no tokens at all', async () => {
  const qwen = parseImageTokens('qwen2-vl:url_tokens=500');
  const [engine] = await engines(1, { imageTokens: qwen });
  const front = await gateway([engine], 'goodput', { adminToken: ADMIN, imageTokens: qwen });
  // A PNG signature and an IHDR of 0 × 0: before, a prompt of NaN tokens, refused kv_capacity
  // with a Retry-After to come back to forever.
  const header = Buffer.alloc(33);
  header.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
  header.write('IHDR', 12, 'latin1');
  const res = await fetch(`${front.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: MODEL,
      max_tokens: 2,
      messages: pictureQuestion(`data:image/png;base64,${header.toString('base64')}`),
    }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  const { usage } = (await res.json()) as { usage: { prompt_tokens: number } };
  const planned = await plannedPrompt(front.url, res.headers.get('x-goodput-request-id') ?? '');
  assert.equal(planned, usage.prompt_tokens);
  assert.ok(planned > 500, `${planned}`);
});
