/**
 * A workload request as the HTTP call a benchmark client makes for it, shaped as
 * `vllm bench serve` shapes it: streamed with usage (`stream_options.include_usage`),
 * `max_tokens` set to the request's output length with `ignore_eos`, so every server generates
 * exactly that many tokens and runs compare length for length. On the completions endpoint the
 * prompt is `inputTokens` token ids (exact on any server: vLLM's random dataset does the same);
 * on the chat endpoint it is filler text of about that many tokens (the server's tokenizer
 * decides); on the Responses API it is the same filler as `input`, with `max_output_tokens` and
 * vLLM's `ignore_eos`, which its Responses server takes too, and `store: false` unless asked:
 * a run leaves no responses kept behind it. Tenants travel as API keys, classes, sessions and
 * client deadlines as Goodput's headers, which any other server ignores.
 */
import type { Rng } from '../core/ports/rng.ts';
import type { LlmRequest } from '../core/request/request.ts';

export type BenchEndpoint = 'completions' | 'chat' | 'responses';
export const BENCH_ENDPOINTS: readonly BenchEndpoint[] = ['completions', 'chat', 'responses'];

const PATHS: Readonly<Record<BenchEndpoint, string>> = {
  completions: '/v1/completions',
  chat: '/v1/chat/completions',
  responses: '/v1/responses',
};

export interface CallShape {
  readonly endpoint: BenchEndpoint;
  readonly model: string;
  /** The key for tenants without one of their own. */
  readonly apiKey?: string;
  /** A key per workload tenant: the server knows tenants by their keys. */
  readonly tenantKeys?: ReadonlyMap<string, string>;
  /** Send each request's class as `x-goodput-class` (only when the run chose classes). */
  readonly sendClass: boolean;
  /** Responses API: ask the server to keep each response (`store`); else a run keeps none. */
  readonly keepResponses?: boolean;
}

export interface BenchCall {
  readonly path: string;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Choices it asks for, when more than one: its tokens are timed choice by choice. */
  readonly choices?: number;
}

/** Token ids drawn from here exist in every current tokenizer's vocabulary (≥ 32,000 ids). */
const TOKEN_ID_LOW = 1_000;
const TOKEN_ID_SPAN = 29_000;
/** About one Llama-3 token per filler word and its space. */
const FILLER_WORDS = ['time', 'data', 'model', 'token', 'serve', 'queue', 'cache', 'batch'];

export function benchCall(req: LlmRequest, shape: CallShape, prompts: Rng): BenchCall {
  const maxTokens = req.maxTokens ?? req.outputTokens;
  const sampling = { model: shape.model, ignore_eos: true, temperature: 0, stream: true };
  // Several choices (`n`, completions and chat): the request's own, from the workload.
  const several = (req.choices ?? 1) > 1 ? { n: req.choices } : {};
  const common = {
    ...sampling,
    max_tokens: maxTokens,
    ...several,
    stream_options: { include_usage: true },
  };
  const body =
    shape.endpoint === 'completions'
      ? { ...common, prompt: tokenIds(req.inputTokens, prompts) }
      : shape.endpoint === 'chat'
        ? { ...common, messages: [{ role: 'user', content: fillerText(req.inputTokens, prompts) }] }
        : // The Responses API reports usage at its end unasked.
          {
            ...sampling,
            max_output_tokens: maxTokens,
            input: fillerText(req.inputTokens, prompts),
            store: shape.keepResponses === true,
          };
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const key = shape.tenantKeys?.get(req.tenant) ?? shape.apiKey;
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  if (shape.sendClass) headers['x-goodput-class'] = req.sloClass;
  if (req.session !== undefined) headers['x-session-id'] = sessionHeader(req.session);
  // A client deadline (a trace's `timeout_ms`) goes as the gateway's relative header: the call
  // is sent when the request arrives.
  if (req.deadlineMs !== undefined) {
    headers['x-goodput-timeout-ms'] = String(
      Math.max(1, Math.round(req.deadlineMs - req.arrivalMs)),
    );
  }
  return {
    path: PATHS[shape.endpoint],
    body: JSON.stringify(body),
    headers,
    ...(several.n === undefined ? {} : { choices: several.n }),
  };
}

/**
 * A session as a header carries it: as it is when it is printable ASCII, else percent-encoded
 * (a trace's session may be any text; a header value may not), the same text always the same id.
 */
export function sessionHeader(session: string): string {
  return /^[\x20-\x7e]*$/.test(session) ? session : encodeURIComponent(session);
}

function tokenIds(n: number, rng: Rng): number[] {
  const ids = new Array<number>(n);
  for (let i = 0; i < n; i++) ids[i] = TOKEN_ID_LOW + Math.floor(rng.next() * TOKEN_ID_SPAN);
  return ids;
}

function fillerText(n: number, rng: Rng): string {
  const words = new Array<string>(n);
  for (let i = 0; i < n; i++) words[i] = FILLER_WORDS[Math.floor(rng.next() * FILLER_WORDS.length)];
  return words.join(' ');
}
