// Real parts for the gateway suites: `goodput engine` servers on a fast constant-step profile,
// a gateway in front of them over HTTP, all on ephemeral ports and closed when the suite ends.
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { resolvePolicy, type ResolvedPolicy } from '../../src/core/config/policy.ts';
import { presetPolicy } from '../../src/core/config/presets.ts';
import {
  ENGINE_DEFAULTS,
  buildEngineConfig,
  buildEngineProfile,
  type EngineSpec,
} from '../../src/engine/engine-spec.ts';
import { serveEngine, type ListeningEngineServer } from '../../src/engine-server/serve.ts';
import type { EngineServerOptions } from '../../src/engine-server/engine-app.ts';
import { startGateway, type RunningGateway, type ServeOptions } from '../../src/gateway/serve.ts';
import type { OpsLog } from '../../src/gateway/ops-log.ts';
import type { Backend } from '../../src/gateway/backend.ts';
import type { LoadedPolicy } from '../../src/sim/policy-source.ts';
import type { ImageTokens } from '../../src/openai/image-size.ts';

export const MODEL = 'llama-3-8b';
const PROFILE = 'const:step_ms=2';

/** Closes `fn`'s server when the current test (or, at top level, the file) ends. */
export function onTeardown(fn: () => Promise<void>): void {
  after(fn);
}

export async function engines(
  n: number,
  opts: EngineServerOptions = {},
): Promise<ListeningEngineServer[]> {
  const out: ListeningEngineServer[] = [];
  for (let i = 0; i < n; i++) {
    const e = await serveEngine({ port: 0, profile: PROFILE, seed: 10 + i, ...opts });
    onTeardown(() => e.close());
    out.push(e);
  }
  return out;
}

export interface GatewayUnderTest extends RunningGateway {
  readonly client: OpenAI;
  /** The same gateway in-process (`app.request`): answers are web streams, not Node's response. */
  readonly inProcess: OpenAI;
}

/**
 * A vLLM whose `/v1/models` lists `listed()` as adapters of `base`, and whose every completion
 * is a 404: an adapter unloaded since it was listed (or another `status`: a 400 refuses the
 * request itself). `hits`: the paths asked, in order. Closed at teardown.
 */
export async function staleVllm(
  base: string,
  listed: () => readonly string[],
  status = 404,
): Promise<{ readonly url: string; readonly hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? '');
    req.resume();
    if (req.url === '/metrics') {
      res.end('vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n');
    } else if (req.url === '/v1/models') {
      const cards = listed().map((id) => ({ id, object: 'model', parent: base }));
      res.end(JSON.stringify({ data: [{ id: base, object: 'model', parent: null }, ...cards] }));
    } else {
      res.writeHead(status, { 'content-type': 'application/json' });
      const message = status === 404 ? 'The model does not exist.' : 'Bad request.';
      res.end(JSON.stringify({ error: { message, code: status } }));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onTeardown(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

/** A gateway in front of `backends` (engines, or anything else that listens at a URL). */
export async function gateway(
  backends: readonly { readonly url: string }[],
  policy: ResolvedPolicy | string = 'goodput',
  extra: {
    adminToken?: string;
    apiKey?: string;
    engine?: Partial<EngineSpec>;
    /** The gateway's operational log (default: none), e.g. `memoryOpsLog()` to read it. */
    log?: OpsLog;
    /** Event-loop lag above which it sheds new requests (default here: 0, never). */
    shedLagMs?: number;
    /** The autoscaler whose decision /metrics exports (default here: none). */
    autoscale?: ServeOptions['autoscale'];
    /** Where request traces go (default: nowhere). */
    tracer?: ServeOptions['tracer'];
    /** How long Responses API responses are kept (default: a day). */
    keptResponses?: ServeOptions['keptResponses'];
    /** The prompt tokens an image takes in the served model (default: images refused). */
    imageTokens?: ImageTokens;
    /** The policy's file, which it reloads (default: none; `policy` must be what it holds). */
    policySource?: LoadedPolicy;
    /** Where what it learned is kept across restarts (default: nowhere, every start cold). */
    learnedState?: ServeOptions['learnedState'];
    /** State shared with other gateways (default: in memory, this gateway's alone). */
    shared?: ServeOptions['shared'];
  } = {},
): Promise<GatewayUnderTest> {
  const spec = { ...ENGINE_DEFAULTS, profile: PROFILE, ...extra.engine };
  const g = await startGateway({
    policy: typeof policy === 'string' ? presetPolicy(policy) : policy,
    policySource: extra.policySource,
    engine: buildEngineConfig(spec),
    profile: buildEngineProfile(spec),
    servedModelName: MODEL,
    backendUrls: backends.map((b) => b.url),
    embedded: () => [],
    host: '127.0.0.1',
    port: 0,
    scrapeIntervalMs: 20,
    adminToken: extra.adminToken,
    log: extra.log,
    // A test machine's event loop lags for reasons of its own: only the shedder's tests shed.
    shedLagMs: extra.shedLagMs ?? 0,
    autoscale: extra.autoscale,
    tracer: extra.tracer,
    keptResponses: extra.keptResponses,
    imageTokens: extra.imageTokens,
    learnedState: extra.learnedState,
    shared: extra.shared,
  });
  onTeardown(() => g.close());
  await until(async () => (await fetch(`${g.url}/readyz`)).status === 200);
  const client = new OpenAI({
    baseURL: `${g.url}/v1`,
    apiKey: extra.apiKey ?? 'none',
    maxRetries: 0,
  });
  const inProcess = new OpenAI({
    baseURL: `${g.url}/v1`,
    apiKey: extra.apiKey ?? 'none',
    maxRetries: 0,
    fetch: (url, init) => Promise.resolve(g.app.request(String(url), init)),
  });
  return { ...g, client, inProcess, close: g.close };
}

/**
 * A gateway on an embedded fleet whose engines no request reaches: for what it refuses at the
 * door.
 */
export async function doorOnlyFleet(): Promise<RunningGateway> {
  const spec = { ...ENGINE_DEFAULTS, profile: PROFILE };
  const idle: Backend = {
    name: 'embedded-0',
    load: () => ({ ready: true, running: 0, waiting: 0, kvUsage: 0, atMs: performance.now() }),
    stream: () => Promise.reject(new Error('no request reaches the engines')),
    close: async () => {},
  };
  const g = await startGateway({
    policy: presetPolicy('goodput'),
    engine: buildEngineConfig(spec),
    profile: buildEngineProfile(spec),
    servedModelName: MODEL,
    backendUrls: [],
    embedded: () => [idle],
    host: '127.0.0.1',
    port: 0,
  });
  onTeardown(() => g.close());
  return g;
}

/** Polls `check` until it holds (the event loop runs between tries); fails after `tries`. */
export async function until(check: () => Promise<boolean> | boolean, tries = 500): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('condition not reached');
}

export function policyWith(doc: Record<string, unknown>): ResolvedPolicy {
  return resolvePolicy({
    name: 'test',
    policy_revision: 'test@1',
    admission: { type: 'goodput' },
    dispatch: { type: 'flow-control' },
    routing: { type: 'least-request' },
    ...doc,
  });
}

/** A chat completion to the server at `url`: `fields` over the model and a one-line prompt. */
export function postChat(
  url: string,
  fields: Record<string, unknown>,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], ...fields }),
    signal,
  });
}

/** `n` streaming chats of `maxTokens` tokens each, sent now; their statuses once read whole. */
export function runningStreams(url: string, n: number, maxTokens: number): Promise<number[]> {
  return Promise.all(
    Array.from({ length: n }, () =>
      postChat(url, { max_tokens: maxTokens, ignore_eos: true, stream: true }).then(async (r) => {
        await r.arrayBuffer();
        return r.status;
      }),
    ),
  );
}

/** Request `id`'s decision record, as the gateway's admin lookup gives it. */
export async function decisionRecord<T>(url: string, id: string, adminToken: string): Promise<T> {
  const res = await fetch(`${url}/admin/decisions/${id}`, {
    headers: { authorization: `Bearer ${adminToken}` },
  });
  assert.equal(res.status, 200, `no decision record for ${id}`);
  return (await res.json()) as T;
}

/** The sum of a metric's lines, over those carrying every one of `labels` (all lines: none given). */
export async function metricValue(
  url: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const set = line.slice(name.length, line.lastIndexOf(' '));
    if (wanted.every((l) => set.includes(`{${l}`) || set.includes(`,${l}`)))
      sum += Number(line.split(' ').pop());
  }
  return sum;
}

/**
 * What a hostile request may have left behind, as a user sees it: whether a normal request is
 * served at once, `/readyz`, and how many backends' circuit breakers are open (0 when every
 * backend is still in the fleet).
 */
export async function aftermath(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ chat: number; readyz: number; breakersOpen: number }> {
  const res = await postChat(url, { max_tokens: 2 }, headers);
  await res.text();
  const readyz = (await fetch(`${url}/readyz`)).status;
  const breakersOpen = await metricValue(url, 'goodput_backend_breaker_state', { state: 'open' });
  return { chat: res.status, readyz, breakersOpen };
}

/** An answer read whole, whichever client got it. */
export interface Answer {
  readonly status: number;
  header(name: string): string | null;
  readonly body: string;
}

/**
 * A POST through node:http on a connection of its own (never a pooled one a gateway may have
 * closed): any bytes, any headers, however large.
 */
export function rawPost(
  url: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
  path = '/v1/chat/completions',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', ...headers },
    });
    req.once('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.once('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          header: (n) => {
            const v = res.headers[n.toLowerCase()];
            return v === undefined ? null : String(v);
          },
          body: Buffer.concat(parts).toString('utf8'),
        }),
      );
    });
    req.once('error', reject);
    req.end(body);
  });
}
