// The official `openai` client against `goodput serve` in front of two `goodput engine`
// servers over real HTTP: non-streaming and streaming, chat and text (its `echo` too), usage and
// token counts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { MODEL, doorOnlyFleet, engines, gateway, metricValue, until } from './gateway-kit.ts';

/** vLLM's `ignore_eos`: generate exactly max_tokens (not in the OpenAI types). */
const eos = <T extends object>(params: T): T => ({ ...params, ignore_eos: true }) as T;

const backends = await engines(2);
const gw = await gateway(backends);
// Served by Node, a stream is written to Node's response; in-process it is a web stream.
const paths = [
  ['over HTTP', gw.client],
  ['in-process', gw.inProcess],
] as const;

test('non-streaming chat: usage counts what was generated', async () => {
  const r = await gw.client.chat.completions.create(
    eos({
      model: MODEL,
      messages: [{ role: 'user', content: 'Tell me about goodput.' }],
      max_tokens: 12,
    }),
  );
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage?.completion_tokens, 12);
  assert.ok((r.usage?.prompt_tokens ?? 0) > 0);
  assert.equal(r.usage?.total_tokens, (r.usage?.prompt_tokens ?? 0) + 12);
  assert.equal(r.choices[0].message.content?.split(' ').length, 12);
});

for (const [how, client] of paths) {
  test(`streaming chat with include_usage, ${how}: one content chunk per token, then usage`, async () => {
    const { data: stream, response } = await client.chat.completions
      .create(
        eos({
          model: MODEL,
          messages: [{ role: 'user', content: 'Stream, please.' }],
          max_tokens: 9,
          stream: true as const,
          stream_options: { include_usage: true },
        }),
      )
      .withResponse();
    let content = 0;
    let usage: { completion_tokens: number } | undefined;
    let finish: string | null = null;
    const ids = new Set<string>();
    for await (const chunk of stream) {
      // Forwarded and rebuilt chunks alike carry the gateway's id, which names the request.
      ids.add(chunk.id);
      assert.equal(chunk.model, MODEL);
      const delta = chunk.choices[0]?.delta?.content;
      if (delta) content++;
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.deepEqual([...ids], [`chatcmpl-${response.headers.get('x-goodput-request-id')}`]);
    assert.equal(content, 9);
    assert.equal(usage?.completion_tokens, 9);
    assert.equal(finish, 'length');
  });
}

test('text completions, streaming and not', async () => {
  const whole = await gw.client.completions.create({
    model: MODEL,
    prompt: 'Once upon a time',
    max_tokens: 5,
  });
  assert.equal(whole.object, 'text_completion');
  assert.ok(
    (whole.usage?.completion_tokens ?? 0) >= 1 && (whole.usage?.completion_tokens ?? 0) <= 5,
  );
  const stream = await gw.client.completions.create({
    model: MODEL,
    prompt: 'Once upon a time',
    max_tokens: 4,
    stream: true,
    stream_options: { include_usage: true },
  });
  let pieces = 0;
  let completion = -1;
  for await (const chunk of stream) {
    if (chunk.choices[0]?.text) pieces++;
    if (chunk.usage) completion = chunk.usage.completion_tokens;
  }
  assert.equal(pieces, completion);
});

test('echo: a text reply starts with the prompt as sent, whole and streamed; usage counts the reply', async () => {
  const asked = eos({ model: MODEL, prompt: 'Once upon a time', max_tokens: 3, echo: true });
  const reply = (await gw.client.completions.create({ ...asked, echo: false })).choices[0].text;
  const whole = await gw.client.completions.create(asked);
  assert.equal(whole.choices[0].text, `Once upon a time${reply}`);
  assert.equal(whole.usage?.completion_tokens, 3);
  const pieces: string[] = [];
  for await (const chunk of await gw.client.completions.create({ ...asked, stream: true })) {
    if (chunk.choices[0]?.text) pieces.push(chunk.choices[0].text);
  }
  assert.equal(pieces.length, 3, 'the prompt comes with the first token, as vLLM sends it');
  assert.equal(pieces.join(''), whole.choices[0].text);
});

test('echo the simulated engines cannot give: a 400 naming echo, at the door and at the engine', async () => {
  const embedded = await doorOnlyFleet();
  const cannot = [
    [{ prompt: [791, 13180, 374] }, 'for a prompt of token ids, which it cannot detokenize'],
    [{ prompt: 'x y', truncate_prompt_tokens: 1 }, 'beside truncate_prompt_tokens'],
  ] as const;
  for (const [url, server] of [
    [embedded.url, 'the simulated fleet'],
    [backends[0].url, 'the simulated engine'],
  ]) {
    for (const [fields, why] of cannot) {
      const res = await fetch(`${url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, max_tokens: 2, echo: true, ...fields }),
      });
      const { error } = (await res.json()) as { error: { message: string; param: string } };
      assert.equal(res.status, 400, error.message);
      assert.equal(error.param, 'echo');
      assert.ok(error.message.startsWith(`echo: not supported by ${server} ${why}`), error.message);
    }
  }
  // A chat's echo is vLLM's other one (the last message continued): not served here.
  await assert.rejects(
    gw.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'x' }],
      echo: true,
    } as never),
    /400 echo: not supported by this server \(expected false or absent\), got true/,
  );
});

for (const [how, client] of paths) {
  test(`a client abort mid-stream frees the request everywhere, ${how}`, async () => {
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      eos({
        model: MODEL,
        messages: [{ role: 'user', content: 'long answer' }],
        max_tokens: 2_000,
        stream: true as const,
      }),
      { signal: controller.signal },
    );
    let seen = 0;
    try {
      for await (const _ of stream) if (++seen === 5) controller.abort();
    } catch {
      // The client reports the abort its own way; what matters is what the servers freed.
    }
    assert.ok(seen >= 5 && seen < 2_000);
    await until(async () => {
      let running = 0;
      for (const b of backends) running += await metricValue(b.url, 'vllm:num_requests_running');
      return running === 0;
    });
    await until(() => gw.gateway.pipeline.dispatcher.ledger.decoding === 0);
    assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
  });
}

test('/v1/models lists the served model; /metrics speaks goodput_ names', async () => {
  const models = await gw.client.models.list();
  assert.deepEqual(
    models.data.map((m) => m.id),
    [MODEL],
  );
  assert.ok((await metricValue(gw.url, 'goodput_good_requests_total')) >= 3);
  assert.ok((await metricValue(gw.url, 'goodput_backend_ready')) === 2);
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(text, /goodput_policy_info\{policy="goodput",policy_revision="goodput@5"\} 1/);
  assert.match(text, /goodput_queued_work_seconds 0/);
  assert.match(text, /goodput_earliest_slack_seconds \+Inf/);
  assert.match(text, /goodput_tenant_share_deviation\{tenant="default"\} 0/);
  assert.match(text, /^goodput_priority_inversions_total 0$/m);
  // TTFT's parts: the gateway's queue, and the engine's own queue / prefill / first decode,
  // which `goodput engine` reports in its usage chunk. Each part is at most the whole.
  // Per-request series carry the served model's name, as inference-gateway dashboards expect.
  const series = `class="interactive",model_name="${MODEL}"`;
  const sum = (name: string) =>
    Number(text.match(new RegExp(`^${name}_sum\\{${series}\\} (\\S+)$`, 'm'))?.[1]);
  const ttft = sum('goodput_ttft_seconds');
  assert.ok(ttft > 0);
  for (const part of ['queue', 'upstream', 'backend_queue', 'prefill', 'first_decode']) {
    const v = sum(`goodput_ttft_${part}_seconds`);
    assert.ok(v >= 0 && v <= ttft, `${part}: ${v} of ${ttft}`);
  }
  assert.ok(sum('goodput_ttft_first_decode_seconds') > 0);
  // A whole request's buckets reach a batch class's hour: its objective is one of them.
  const e2eTop = `goodput_e2e_seconds_bucket{le="3600",${series}}`;
  assert.ok(text.includes(e2eTop), e2eTop);
  // Counted per token: every gap is a token after a stream's first, and each output token is
  // two weighted tokens of its tenant's service.
  const one = (pattern: RegExp) => Number(text.match(pattern)?.[1]);
  const gaps = one(new RegExp(`^goodput_itl_seconds_count\\{${series}\\} (\\S+)$`, 'm'));
  const service = one(
    /^goodput_tenant_service_tokens_total\{tenant="default",cost_revision="vtc-1"\} (\S+)$/m,
  );
  assert.ok(gaps > 0);
  assert.ok(service >= 2 * gaps, `service ${service}, gaps ${gaps}`);
});

test('models.retrieve: the served model, its answer carrying an id; another name is a 404 naming it', async () => {
  const { data: listed, response } = await gw.client.models.list().withResponse();
  assert.ok(response.headers.get('x-request-id'), 'the list carries an id');
  const model = await gw.client.models.retrieve(MODEL);
  assert.deepEqual(model, listed.data[0]);
  assert.equal(model.object, 'model');
  const missing = await gw.client.models.retrieve('no-such-model').catch((e: unknown) => e);
  assert.ok(missing instanceof OpenAI.NotFoundError, String(missing));
  assert.equal(missing.code, 'model_not_found');
  assert.ok(missing.requestID, 'the refusal carries an id');
  const odd = await fetch(`${gw.url}/v1/models/%E0%A4%A`);
  assert.equal(odd.status, 404, 'a name that does not decode is no model either, not a 500');
  const posted = await fetch(`${gw.url}/v1/models/${MODEL}`, { method: 'POST' });
  assert.equal(posted.status, 405);
  assert.equal(posted.headers.get('allow'), 'GET, HEAD');
});

test("a prompt sent again is served from the engine's prefix cache, and its usage says so", async () => {
  const one = await gateway([backends[0]]);
  const content = 'Summarise the incident report for the on-call engineer. '.repeat(40);
  const ask = { model: MODEL, messages: [{ role: 'user' as const, content }], max_tokens: 4 };
  const cachedOf = (u: { prompt_tokens_details?: { cached_tokens?: number } | null } | undefined) =>
    u?.prompt_tokens_details?.cached_tokens;
  const first = await one.client.chat.completions.create(ask);
  assert.equal(cachedOf(first.usage), 0, 'nothing cached the first time');
  const again = await one.client.chat.completions.create(ask);
  const cached = cachedOf(again.usage) ?? 0;
  assert.ok(cached > 0 && cached <= (again.usage?.prompt_tokens ?? 0), `cached ${cached}`);
  // Streamed, its usage chunk says the same; as a Responses request, its input tokens' details.
  const stream = await one.client.chat.completions.create({
    ...ask,
    stream: true,
    stream_options: { include_usage: true },
  });
  let streamed: number | undefined;
  for await (const chunk of stream) if (chunk.usage) streamed = cachedOf(chunk.usage);
  assert.equal(streamed, cached);
  const response = await one.client.responses.create({
    model: MODEL,
    input: content,
    max_output_tokens: 4,
  });
  assert.equal(response.usage?.input_tokens_details.cached_tokens, cached);
});

test("the client reads each answer's id as OpenAI's: served or refused, the id its record is found by", async () => {
  const asked = { model: MODEL, messages: [{ role: 'user' as const, content: 'Hi' }] };
  for (const [path, client] of paths) {
    const served = await client.chat.completions.create({ ...asked, max_tokens: 2 }).withResponse();
    const id = served.response.headers.get('x-goodput-request-id');
    assert.ok(id !== null && id !== '', path);
    assert.equal(served.request_id, id, `${path}: request_id`);
    const plain = await client.chat.completions.create({ ...asked, max_tokens: 2 });
    assert.ok(plain._request_id, `${path}: _request_id`);
    const { response } = await client.chat.completions
      .create({ ...asked, max_tokens: 2, stream: true })
      .withResponse();
    assert.equal(
      response.headers.get('x-request-id'),
      response.headers.get('x-goodput-request-id'),
    );
    await response.body?.cancel();
    // Refused: the SDK's error carries the id too.
    const refused = await client.chat.completions.create({ ...asked, max_tokens: -1 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(refused instanceof OpenAI.APIError && refused.status === 400, path);
    assert.ok(refused.requestID !== null && refused.requestID !== undefined, path);
    assert.equal(refused.requestID, refused.headers?.get('x-goodput-request-id'));
  }
});

test('a request that names no model is served the served one, as vLLM serves it: the backend is asked for it by name', async () => {
  const res = await fetch(`${gw.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'hi', max_tokens: 2 }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(((await res.json()) as { model: string }).model, MODEL);
});
