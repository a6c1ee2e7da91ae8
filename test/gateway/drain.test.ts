// `goodput serve` shut down as Kubernetes does it (SIGTERM, then terminationGracePeriod): real
// processes — a `goodput engine` backend, gateways sharing a real Redis — and the official
// `openai` client streaming. On SIGTERM the gateway turns not-ready and refuses new requests at
// once, lets its streams run to their end within --drain-timeout or cuts them with an SSE error
// event naming the shutdown, flushes its decision log, gives back every Redis lease (a fresh
// gateway on the same Redis admits the tenant's full quota at once, long before a lease's TTL)
// and exits 0; a second SIGTERM cuts what is left at once.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { APIError } from 'openai';
import { startRedis } from './redis-kit.ts';
import { startEngine, startServe, until, type GoodputProcess } from './process-kit.ts';

const MODEL = 'llama-3-8b';
/** 15 ms a decode step: 100 tokens take ~1.5 s, 700 take ~10 s. */
const PROFILE = 'const:step_ms=15';
const KEY = 'sk-acme-drain';
const QUOTA = 20;
const SHORT_TOKENS = 100;
const LONG_TOKENS = 700;
/** How long a tenant's slot lease in Redis outlives a gateway that never gives it back. */
const LEASE_TTL_MS = 30_000;

const dir = mkdtempSync(join(tmpdir(), 'goodput-drain-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const policyFile = join(dir, 'policy.json');
writeFileSync(
  policyFile,
  JSON.stringify({
    name: 'drain',
    policy_revision: 'drain@1',
    admission: { type: 'goodput' },
    dispatch: { type: 'flow-control' },
    routing: { type: 'least-request' },
    // A busy machine's event loop lags for reasons of its own: these gateways must refuse for
    // their drain and their quota, not shed as overloaded (as goodputWithoutShedding does).
    resilience: { shed_lag_ms: 0 },
    tenants: {
      acme: {
        api_keys_sha256: [createHash('sha256').update(KEY).digest('hex')],
        quotas: { max_concurrent_requests: QUOTA },
      },
    },
  }),
);
const engineUrl = await startEngine(['--profile', PROFILE]);

interface Gw {
  readonly url: string;
  readonly proc: GoodputProcess;
  readonly decisions: string;
}

/** A gateway in front of the engine, on `redisUrl`, ready (its backend scraped). */
async function gateway(redisUrl: string, drainSeconds: number, name: string): Promise<Gw> {
  const decisions = join(dir, `${name}.decisions.jsonl`);
  const { url, proc } = await startServe([
    '--backend',
    engineUrl,
    '--policy',
    policyFile,
    '--profile',
    PROFILE,
    '--redis',
    redisUrl,
    '--decisions',
    decisions,
    '--drain-timeout',
    String(drainSeconds),
  ]);
  await until('the gateway ready', async () => (await readyz(url)) === 200);
  assert.equal(await readyz(url, '/health'), 200, "vLLM's probe path answers as /readyz");
  return { url, proc, decisions };
}

async function readyz(url: string, path = '/readyz'): Promise<number> {
  try {
    const res = await fetch(`${url}${path}`);
    await res.body?.cancel();
    return res.status;
  } catch {
    return 0;
  }
}

interface StreamEnd {
  readonly finish: string | null;
  readonly usage: OpenAI.CompletionUsage | undefined;
  readonly tokens: number;
  readonly error: unknown;
  /** performance.now() when the client's iteration ended. */
  readonly endedAt: number;
  /** The bytes as they came, [DONE] included (the SDK stops before it on an error event). */
  readonly raw: string;
}

interface OpenStream {
  /** The gateway's request id (`x-goodput-request-id`). */
  readonly id: string;
  /** True once a content token came; false if the stream ended before one. */
  readonly firstToken: Promise<boolean>;
  readonly end: Promise<StreamEnd>;
}

/** A streaming chat completion of `maxTokens` tokens through the official client. */
async function openStream(url: string, maxTokens: number): Promise<OpenStream> {
  let raw: Promise<string> = Promise.resolve('');
  const client = new OpenAI({
    baseURL: `${url}/v1`,
    apiKey: KEY,
    maxRetries: 0,
    // The SDK aborts its request once it has read an error event; without the signal the bytes
    // after it ([DONE]) still arrive, on a copy of the body kept here.
    fetch: async (input, init) => {
      const res = await fetch(input, { ...init, signal: undefined });
      if (res.body === null) return res;
      const [sdk, mine] = res.body.tee();
      raw = new Response(mine).text().catch((e: Error) => `(body broken off: ${e.message})`);
      return new Response(sdk, { status: res.status, headers: res.headers });
    },
  });
  const { data: stream, response } = await client.chat.completions
    .create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Tell me a long story.' }],
      max_tokens: maxTokens,
      stream: true,
      stream_options: { include_usage: true },
      // vLLM's: generate exactly max_tokens (not in the OpenAI types).
      ...({ ignore_eos: true } as object),
    })
    .withResponse();
  let first: (seen: boolean) => void = () => {};
  const firstToken = new Promise<boolean>((resolve) => (first = resolve));
  const end = (async (): Promise<StreamEnd> => {
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    let tokens = 0;
    let error: unknown;
    try {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta?.content) {
          tokens++;
          first(true);
        }
        finish = chunk.choices[0]?.finish_reason ?? finish;
        if (chunk.usage) usage = chunk.usage;
      }
    } catch (e) {
      error = e;
    } finally {
      first(false);
    }
    const endedAt = performance.now();
    return { finish, usage, tokens, error, endedAt, raw: await raw };
  })();
  return { id: response.headers.get('x-goodput-request-id') ?? '', firstToken, end };
}

/** `QUOTA` streams, each past its first token. */
async function streamsUnderWay(url: string, maxTokens: number): Promise<OpenStream[]> {
  const streams = await Promise.all(
    Array.from({ length: QUOTA }, () => openStream(url, maxTokens)),
  );
  const firsts = await Promise.all(streams.map((s) => s.firstToken));
  assert.ok(firsts.every(Boolean), 'every stream had its first token before the SIGTERM');
  return streams;
}

function post(url: string, body: Record<string, unknown>, signal?: AbortSignal) {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], ...body }),
    signal,
  });
}

/** The first of `p`'s JSON log lines whose `msg` is (or matches) `msg`. */
function logged(p: GoodputProcess, msg: string | RegExp): Record<string, unknown> | undefined {
  return p
    .jsonLines()
    .find((l) => (typeof msg === 'string' ? l.msg === msg : msg.test(String(l.msg))));
}

/** The decision log's records of `msg` (a line that is not JSON fails, naming it). */
function decisionRecords(file: string, msg = 'decision'): Record<string, unknown>[] {
  return logLines(file).filter((r) => r.msg === msg);
}

/** How request `id` ended, by its outcome record. */
function outcomeOf(file: string, id: string): { state: string; output_tokens: number } {
  const r = decisionRecords(file, 'outcome').find((x) => x.request_id === id);
  return r?.outcome as { state: string; output_tokens: number };
}

/** The decision log, every line parsed (a line that is not JSON fails, naming it). */
function logLines(file: string): Record<string, unknown>[] {
  const text = readFileSync(file, 'utf8');
  assert.ok(text.endsWith('\n'), 'the decision log ends with a whole line');
  return text
    .trimEnd()
    .split('\n')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        assert.fail(`a decision log line is not JSON: ${line}`);
      }
    });
}

function admissionOf(records: Record<string, unknown>[], id: string, result: string) {
  const r = records.find(
    (x) => x.request_id === id && (x.admission as { result: string }).result === result,
  );
  return r?.admission as { result: string; reason: string | null; status: number | null };
}

/**
 * The lease check: a fresh gateway on the same Redis admits the tenant's whole quota at once,
 * well within a lease's TTL of the drained gateway's exit, so that one gave back every slot (a
 * leaked one would hold until its TTL); one more is refused, so the quota is really enforced
 * through Redis.
 */
async function quotaIsFree(redisUrl: string, exitedAt: number): Promise<void> {
  const next = await gateway(redisUrl, 30, `next-${redisUrl.split(':').pop()}`);
  const stop = new AbortController();
  try {
    const answers = await Promise.all(
      Array.from({ length: QUOTA }, () =>
        post(next.url, { max_tokens: SHORT_TOKENS, ignore_eos: true, stream: true }, stop.signal),
      ),
    );
    const refusals = answers
      .filter((r) => r.status !== 200)
      .map((r) => `${r.status} ${r.headers.get('x-goodput-reason')}`);
    assert.deepEqual(refusals, [], `all ${QUOTA} admitted at once by a fresh gateway`);
    const afterMs = performance.now() - exitedAt;
    assert.ok(afterMs < LEASE_TTL_MS / 3, `admitted ${afterMs} ms after the exit, before any TTL`);
    const over = await post(next.url, { max_tokens: 1 });
    assert.equal(
      over.status,
      429,
      `one over the quota is refused: the slots are held in Redis (${over.headers.get('x-goodput-reason')})`,
    );
    assert.equal(over.headers.get('x-goodput-reason'), 'tenant_concurrency');
    await over.body?.cancel();
  } finally {
    stop.abort();
    next.proc.child.kill('SIGKILL');
  }
}

test('SIGTERM: not ready and refusing at once, every stream runs to its end, leases freed, exit 0', async () => {
  const redis = await startRedis();
  const gw = await gateway(redis.url, 30, 'finish');
  const streams = await streamsUnderWay(gw.url, SHORT_TOKENS);

  gw.proc.child.kill('SIGTERM');
  await until('/readyz 503 after SIGTERM', async () => (await readyz(gw.url)) === 503, 2_000, 5);
  assert.equal(await readyz(gw.url, '/health'), 503, 'a probe of /health sees the drain too');
  const ended = { n: 0 };
  for (const s of streams) void s.end.then(() => ended.n++);
  const refused = await post(gw.url, { max_tokens: 1 }).catch((e: Error) => e);
  if (refused instanceof Error) {
    // Only once the listener closed, which is only after the streams ended.
    assert.equal(ended.n, QUOTA, `refused by connection before the streams ended: ${refused}`);
  } else {
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('x-goodput-reason'), 'shutting_down');
    assert.ok(Number(refused.headers.get('retry-after')) >= 1, 'a Retry-After');
    const body = (await refused.json()) as { error: { code: string } };
    assert.equal(body.error.code, 'shutting_down');
  }
  const refusedId = refused instanceof Error ? null : refused.headers.get('x-goodput-request-id');

  for (const [i, s] of (await Promise.all(streams.map((x) => x.end))).entries()) {
    assert.equal(s.error, undefined, `stream ${i} ended without an error, got ${s.error}`);
    assert.equal(s.finish, 'length', `stream ${i} finished`);
    assert.equal(s.tokens, SHORT_TOKENS, `stream ${i}: every token`);
    assert.equal(s.usage?.completion_tokens, SHORT_TOKENS, `stream ${i}: its usage chunk`);
    assert.ok(s.raw.endsWith('data: [DONE]\n\n'), `stream ${i} ends with [DONE]`);
  }
  assert.deepEqual(await gw.proc.exited, { code: 0, signal: null }, gw.proc.output());
  const exitedAt = performance.now();

  assert.deepEqual(gw.proc.otherLines(), [], 'every stdout line is JSON');
  assert.equal(logged(gw.proc, 'shutting down')?.signal, 'SIGTERM');
  assert.ok(logged(gw.proc, /^draining/), 'a draining line');
  const drained = logged(gw.proc, 'drained');
  assert.deepEqual([drained?.finished, drained?.cut], [QUOTA, 0], 'drained: all finished');
  assert.ok(logged(gw.proc, 'stopped'), 'a stopped line');

  const records = decisionRecords(gw.decisions);
  for (const s of streams) {
    assert.ok(admissionOf(records, s.id, 'admit'), `${s.id} admitted`);
    const ended = outcomeOf(gw.decisions, s.id);
    assert.deepEqual([ended?.state, ended?.output_tokens], ['completed', SHORT_TOKENS]);
  }
  assert.ok(!records.some((r) => (r.admission as { result: string }).result === 'abort'));
  if (refusedId !== null) {
    const a = admissionOf(records, refusedId, 'reject');
    assert.deepEqual([a?.reason, a?.status], ['shutting_down', 503]);
  }

  await quotaIsFree(redis.url, exitedAt);
});

test('SIGTERM with answers in flight that are not streamed: each is answered in full, then exit 0', async () => {
  const redis = await startRedis();
  const gw = await gateway(redis.url, 30, 'whole');
  // ~1.5 s of decoding each; SIGTERM once they are under way.
  const answers = Array.from({ length: 4 }, () =>
    post(gw.url, { max_tokens: SHORT_TOKENS, ignore_eos: true }).then(async (res) => ({
      status: res.status,
      body: (await res.json()) as { usage?: { completion_tokens: number } },
    })),
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  gw.proc.child.kill('SIGTERM');
  for (const [i, a] of (await Promise.all(answers)).entries()) {
    assert.equal(a.status, 200, `answer ${i}`);
    assert.equal(a.body.usage?.completion_tokens, SHORT_TOKENS, `answer ${i}: in full`);
  }
  assert.deepEqual(await gw.proc.exited, { code: 0, signal: null }, gw.proc.output());
  assert.deepEqual([logged(gw.proc, 'drained')?.finished, logged(gw.proc, 'drained')?.cut], [4, 0]);
});

/** Every stream was cut: an API error naming the shutdown, the error event, then [DONE]. */
function cutWithErrorEvent(ends: readonly StreamEnd[]): void {
  for (const [i, s] of ends.entries()) {
    assert.ok(s.error instanceof APIError, `stream ${i} ends with an API error, got ${s.error}`);
    assert.equal(s.error.code, 'shutting_down');
    assert.match(s.error.message, /shut down/);
    assert.match(
      s.raw,
      /data: \{"error":\{[^\n]*"code":"shutting_down"\}\}\n\ndata: \[DONE\]\n\n$/,
    );
  }
}

/**
 * What a cut request leaves in the decision log: an `abort` record, reason shutting_down, and
 * an outcome record that it ended failed.
 */
function abortRecorded(gw: Gw, streams: readonly OpenStream[]): void {
  const records = decisionRecords(gw.decisions);
  for (const s of streams) {
    const a = admissionOf(records, s.id, 'abort');
    assert.equal(a?.reason, 'shutting_down', `${s.id}: an abort record, shutting_down`);
    assert.equal(outcomeOf(gw.decisions, s.id)?.state, 'failed', `${s.id}: ended failed`);
  }
}

test('drain time runs out: every stream is cut with a shutting_down error event, then [DONE]', async () => {
  const redis = await startRedis();
  const gw = await gateway(redis.url, 0.5, 'cut');
  const streams = await streamsUnderWay(gw.url, LONG_TOKENS);

  const signalledAt = performance.now();
  gw.proc.child.kill('SIGTERM');
  const ends = await Promise.all(streams.map((s) => s.end));
  for (const [i, s] of ends.entries()) {
    assert.notEqual(s.error, undefined, `stream ${i} ended early, with an error`);
    assert.ok(s.tokens > 0 && s.tokens < LONG_TOKENS, `stream ${i} was cut mid-way`);
    const tookMs = s.endedAt - signalledAt;
    assert.ok(tookMs >= 400 && tookMs < 3_000, `stream ${i} cut after the drain time: ${tookMs}`);
  }
  cutWithErrorEvent(ends);
  assert.deepEqual(await gw.proc.exited, { code: 0, signal: null }, gw.proc.output());
  const exitedAt = performance.now();
  assert.deepEqual(gw.proc.otherLines(), [], 'every stdout line is JSON');
  assert.equal(logged(gw.proc, /^drain time over/)?.cut, QUOTA);
  const drained = logged(gw.proc, 'drained');
  assert.deepEqual([drained?.finished, drained?.cut], [0, QUOTA], 'drained: all cut');
  abortRecorded(gw, streams);

  await quotaIsFree(redis.url, exitedAt);
});

test('a second SIGTERM cuts the streams at once, and the gateway exits 0', async () => {
  const redis = await startRedis();
  const gw = await gateway(redis.url, 30, 'twice');
  const streams = await streamsUnderWay(gw.url, LONG_TOKENS);

  gw.proc.child.kill('SIGTERM');
  await until('the drain begun', () => logged(gw.proc, /^draining/) !== undefined, 2_000, 5);
  const signalledAt = performance.now();
  gw.proc.child.kill('SIGTERM');
  const ends = await Promise.all(streams.map((s) => s.end));
  cutWithErrorEvent(ends);
  for (const [i, s] of ends.entries()) {
    const tookMs = s.endedAt - signalledAt;
    assert.ok(tookMs < 2_000, `stream ${i} cut at once: ${tookMs}`);
  }
  assert.deepEqual(await gw.proc.exited, { code: 0, signal: null }, gw.proc.output());
  const exitedAt = performance.now();
  assert.ok(logged(gw.proc, /^second signal/), 'a second-signal line');
  const drained = logged(gw.proc, 'drained');
  assert.deepEqual([drained?.finished, drained?.cut], [0, QUOTA], 'drained: all cut');
  abortRecorded(gw, streams);

  await quotaIsFree(redis.url, exitedAt);
});
