// Overload and failure, with real servers: a burst far beyond capacity is refused fast with
// Retry-After while the admitted requests keep their SLO and the process keeps answering; a
// backend that dies mid-stream ends the client's stream with an error event; an attempt that
// failed and was tried again, or that its backend refused, has its own outcome record.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  aftermath,
  engines,
  gateway,
  metricValue,
  MODEL,
  policyWith,
  postChat,
  staleVllm,
  rawPost,
  until,
  type Answer,
} from './gateway-kit.ts';

const slow = { profile: 'const:step_ms=10', maxNumSeqs: 4 };

test('a burst far beyond capacity: fast 503s with Retry-After, admitted requests within SLO', async () => {
  const backends = await engines(2, slow);
  const gw = await gateway(backends, 'goodput', { engine: slow });
  const send = async () => {
    const res = await postChat(gw.url, {
      messages: [{ role: 'user', content: 'burst' }],
      max_tokens: 60,
      ignore_eos: true,
    });
    const body = await res.text();
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      retryAfterMs: res.headers.get('retry-after-ms'),
      reason: res.headers.get('x-goodput-reason'),
      body,
      order: order++,
    };
  };
  let order = 0;
  const burst = await Promise.all(Array.from({ length: 120 }, send));
  const health = await fetch(`${gw.url}/healthz`);
  assert.equal(health.status, 200, 'the process stays responsive');
  const refused = burst.filter((r) => r.status === 503 || r.status === 429);
  const served = burst.filter((r) => r.status === 200);
  assert.ok(refused.length > 0, 'some of the burst is refused');
  assert.ok(served.length > 0, 'some of it is served');
  assert.equal(
    refused.length + served.length,
    burst.length,
    JSON.stringify(burst.find((r) => r.status !== 200 && r.status !== 503)),
  );
  for (const r of refused) {
    assert.ok(Number(r.retryAfter) >= 1, 'Retry-After in whole seconds');
    // To the millisecond too (the OpenAI SDK reads retry-after-ms first), the same wait rounded up.
    assert.match(r.retryAfterMs ?? '', /^[1-9]\d*$/);
    assert.equal(Math.max(1, Math.ceil(Number(r.retryAfterMs) / 1000)), Number(r.retryAfter));
    assert.ok(
      ['deadline', 'service_capacity', 'kv_capacity'].includes(r.reason ?? ''),
      r.reason ?? '',
    );
  }
  // Refusals come back before the served requests finish: decided at the door, not by timeout.
  const lastRefusal = Math.max(...refused.map((r) => r.order));
  const firstServed = Math.min(...served.map((r) => r.order));
  assert.ok(lastRefusal < firstServed || refused.length > served.length, 'refusals are fast');
  const good = await metricValue(gw.url, 'goodput_good_requests_total');
  const completed = await metricValue(gw.url, 'goodput_completed_requests_total');
  assert.equal(completed, served.length);
  // An admitted request is a served one: none expires waiting, every one keeps its SLO.
  const expired = await metricValue(gw.url, 'goodput_admission_decisions_total', {
    outcome: 'expire',
  });
  assert.equal(expired, 0, 'admitted requests that expired in the queue');
  assert.equal(good, completed, `admitted requests keep their SLO: ${good}/${completed}`);
});

test('a backend crash mid-stream ends the stream with an error event', async () => {
  const backends = await engines(1, { faults: { crashRate: 1 } });
  const gw = await gateway(backends);
  const res = await postChat(gw.url, {
    messages: [{ role: 'user', content: 'crash' }],
    max_tokens: 20,
    ignore_eos: true,
    stream: true,
  });
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.match(text, /"content":/, 'tokens came first');
  // As vLLM ends a failed stream: the error event (naming the cause), then [DONE]; no finish.
  assert.match(
    text,
    /data: \{"error":\{"message":"the upstream failed mid-stream"[^\n]*"code":"upstream_error"\}\}\n\ndata: \[DONE\]\n\n$/,
  );
  assert.doesNotMatch(text, /"finish_reason":"(stop|length)"/);
  assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
});

test('a backend failing before the first token: the request fails over to another', async () => {
  const [broken] = await engines(1, { faults: { failRate: 1 } });
  const [healthy] = await engines(1);
  const gw = await gateway([broken, healthy]);
  for (let i = 0; i < 6; i++) {
    const res = await postChat(gw.url, {
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 3,
    });
    assert.equal(res.status, 200, `request ${i}`);
    await res.text();
  }
});

test('a failed attempt tried again has its own outcome record: a refused retry is found with it', async () => {
  const [broken] = await engines(1, { faults: { failRate: 1 } });
  const admin = 'retry-admin';
  const breakAtOnce = { circuit_breaker: { consecutive_failures: 1, open_ms: 60_000 } };
  const gw = await gateway([broken], policyWith({ resilience: breakAtOnce }), {
    adminToken: admin,
  });
  const res = await postChat(gw.url, { messages: [{ role: 'user', content: 'x' }], max_tokens: 3 });
  // The first attempt failed and opened the breaker: the retry found no backend to go to. The
  // client hears the failure, to try again when a breaker next probes.
  assert.equal(res.status, 502);
  assert.match(await res.clone().text(), /a retry could not be placed \(no_ready_replica\)/);
  assert.ok(Number(res.headers.get('retry-after')) >= 1);
  const id = res.headers.get('x-goodput-request-id') ?? '';
  const looked = await fetch(`${gw.url}/admin/decisions/${id}`, {
    headers: { authorization: `Bearer ${admin}` },
  });
  const record = (await looked.json()) as {
    admission: { result: string; reason: string };
    outcome?: { state: string; tried_again?: boolean; predicted_ttft_ms: number | null };
  };
  assert.deepEqual(
    [record.admission.result, record.admission.reason],
    ['reject', 'no_ready_replica'],
  );
  assert.equal(record.outcome?.state, 'failed', 'the failed attempt is found with the refusal');
  assert.equal(record.outcome?.tried_again, true);
  assert.ok((record.outcome?.predicted_ttft_ms ?? 0) > 0, 'what its admission had predicted');
});

test("an attempt its backend refuses (a 4xx, the request's fault) has an outcome record: rejected", async () => {
  const admin = 'refused-admin';
  const refusing = await staleVllm(MODEL, () => [], 400);
  const gw = await gateway([refusing], 'goodput', { adminToken: admin });
  const res = await postChat(gw.url, { messages: [{ role: 'user', content: 'x' }], max_tokens: 3 });
  await res.text();
  assert.equal(res.status, 400, 'the backend said it');
  const id = res.headers.get('x-goodput-request-id') ?? '';
  const looked = await fetch(`${gw.url}/admin/decisions/${id}`, {
    headers: { authorization: `Bearer ${admin}` },
  });
  const record = (await looked.json()) as {
    admission: { result: string };
    outcome?: { state: string; tried_again?: boolean };
  };
  assert.equal(record.admission.result, 'admit');
  assert.deepEqual(record.outcome && [record.outcome.state, record.outcome.tried_again], [
    'rejected',
    undefined,
  ]);
});

test('a standing overload is refused before bodies are read, each refusal recorded with the wait that ruled it out', async () => {
  const backends = await engines(2, slow);
  const admin = 'overload-admin';
  const gw = await gateway(backends, 'goodput', { engine: slow, adminToken: admin });
  const send = async (i: number) => {
    // Every tenth carries an idempotency key: its answer may be held from an earlier attempt,
    // so it is always read.
    const keyed = i % 10 === 0;
    const res = await postChat(
      gw.url,
      { messages: [{ role: 'user', content: `wave ${i}` }], max_tokens: 60, ignore_eos: true },
      keyed ? { 'idempotency-key': `overload-${i}` } : {},
    );
    await res.arrayBuffer();
    return {
      keyed,
      status: res.status,
      reason: res.headers.get('x-goodput-reason'),
      id: res.headers.get('x-goodput-request-id') ?? '',
    };
  };
  // A burst fills the queue; two more waves arrive while it stands.
  const answers = [];
  for (let wave = 0; wave < 3; wave++) {
    answers.push(
      ...(await Promise.all(Array.from({ length: 150 }, (_, i) => send(wave * 150 + i)))),
    );
  }
  const record = async (id: string) => {
    const res = await fetch(`${gw.url}/admin/decisions/${id}`, {
      headers: { authorization: `Bearer ${admin}` },
    });
    assert.equal(res.status, 200, `no decision record for ${id}`);
    return (await res.json()) as {
      demand: unknown;
      admission: {
        reason: string | null;
        predicted_wait_ms: number | null;
        queue_target_ms: number | null;
      };
    };
  };
  let unread = 0;
  for (const a of answers.filter((x) => x.status === 503 && x.reason === 'deadline')) {
    const r = await record(a.id);
    if (r.demand !== null) continue;
    unread++;
    assert.equal(a.keyed, false, 'a keyed request is read');
    const { predicted_wait_ms: wait, queue_target_ms: target } = r.admission;
    assert.ok(wait !== null && target !== null && wait > target, JSON.stringify(r.admission));
  }
  assert.ok(unread > 0, 'some of the standing overload was refused unread');
  const offered = await metricValue(gw.url, 'goodput_offered_requests_total');
  assert.equal(offered, answers.length, 'every request is counted, read or not');
});

test('hostile bodies in a standing overload: refused unread or refused for their fault, never a failure, and the gateway serves again', async () => {
  const backends = await engines(2, slow);
  const gw = await gateway(backends, 'goodput', { engine: slow });
  const wave = (n: number) =>
    Array.from({ length: n }, (_, i) =>
      postChat(gw.url, {
        messages: [{ role: 'user', content: `wave ${i}` }],
        max_tokens: 60,
        ignore_eos: true,
      }).then((r) => r.arrayBuffer()),
    );
  const depth = 5_000;
  const hostile = [
    // 10 KB of nested arrays in an unknown field, a truncated body, a prototype key.
    `{"model":"llama-3-8b","messages":[{"role":"user","content":"x"}],"max_tokens":3,"x":${'['.repeat(depth)}${']'.repeat(depth)}}`,
    '{"model":"llama-3-8b","messages":[{"role":"user","content":"x"',
    '{"model":"llama-3-8b","messages":[{"role":"user","content":"x"}],"__proto__":{"admin":true}}',
  ];
  // A burst fills the queue; the hostile bodies arrive with the waves after it, while the queue
  // stands, until one of them is refused before it is read.
  await Promise.all(wave(150));
  const answers: Answer[] = [];
  for (let round = 0; round < 6; round++) {
    const [sent] = await Promise.all([
      Promise.all(hostile.flatMap((body) => [1, 2].map(() => rawPost(gw.url, body)))),
      ...wave(150),
    ]);
    answers.push(...sent);
    if (sent.some((a) => a.status === 503)) break;
  }
  for (const a of answers) {
    const reason = a.header('x-goodput-reason');
    assert.ok(
      (a.status === 503 && reason === 'deadline') || a.status === 400,
      `${a.status} ${reason} ${a.body}`,
    );
    assert.match(a.header('x-goodput-request-id') ?? '', /./);
  }
  assert.ok(
    answers.some((a) => a.status === 503),
    'a hostile body refused unread, its fault never looked at',
  );
  // Once the overload has drained, a well-formed request is served and no backend was blamed.
  await until(async () => (await aftermath(gw.url)).chat === 200);
  assert.deepEqual(await aftermath(gw.url), { chat: 200, readyz: 200, breakersOpen: 0 });
});
