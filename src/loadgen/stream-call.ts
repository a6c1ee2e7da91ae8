/**
 * Sends one benchmark call over a keep-alive node:http agent and times its stream, as vLLM's
 * benchmark client does: TTFT at the first chunk that carries a token, every later token chunk
 * a gap, E2E at the last. A Responses API stream is read by its events: a token is a text,
 * thinking or call-arguments delta, or a call announced; its end is `response.completed` or
 * `response.incomplete`, whose response carries the usage. It never throws: a refused
 * connection, an HTTP error, an error event in the stream (`response.failed` too), a stream cut
 * before its end, the client's own timeout (from the send to the answer's end, however the
 * server trickles it) or the run interrupted each end as a failed record with a status and a
 * reason, so a run against a broken server still reports — as does one whose stream is not
 * what a server of the API sends (an event not a JSON object, one past the reader's limit,
 * counts that are not counts: `bad_stream`) or whose call cannot be sent at all (`bad_request`).
 */
import http from 'node:http';
import https from 'node:https';
import type { Clock } from '../core/ports/clock.ts';
import type { Timers } from '../core/ports/timers.ts';
import { SseReader } from '../openai/sse-reader.ts';
import type { BenchCall } from './bench-call.ts';
import type { CallRecord } from './call-record.ts';

export interface StreamCallContext {
  readonly baseUrl: string;
  readonly clock: Clock;
  readonly timers: Timers;
  /** From the send to the answer's end. */
  readonly timeoutMs: number;
  /** The run interrupted: a call still running ends there. */
  readonly stop?: AbortSignal;
}

export type CallIdentity = Pick<CallRecord, 'id' | 'tenant' | 'sloClass' | 'dueMs'> & {
  readonly promptTokens: number;
};

const MAX_ERROR_BODY = 16 * 1024;
const MAX_MESSAGE = 200;

const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: Infinity }),
  https: new https.Agent({ keepAlive: true, maxSockets: Infinity }),
};

export function streamCall(
  ctx: StreamCallContext,
  who: CallIdentity,
  call: BenchCall,
): Promise<CallRecord> {
  const url = new URL(ctx.baseUrl + call.path);
  const secure = url.protocol === 'https:';
  const sentMs = ctx.clock.now();
  const tokenTimesMs: number[] = [];
  const tokenChoices: number[] | undefined = call.choices === undefined ? undefined : [];
  let usage: { prompt?: number; completion?: number } = {};
  let serverId: string | undefined;

  return new Promise((resolve) => {
    let settled = false;
    const finish = (
      outcome: Pick<CallRecord, 'ok' | 'status'> & { reason?: string; error?: string },
    ) => {
      if (settled) return;
      settled = true;
      late.cancel();
      ctx.stop?.removeEventListener('abort', interrupted);
      resolve({
        ...who,
        sentMs,
        endMs: ctx.clock.now(),
        serverId,
        tokenTimesMs,
        ...(tokenChoices === undefined ? {} : { tokenChoices }),
        promptTokens: usage.prompt ?? who.promptTokens,
        outputTokens: usage.completion ?? tokenTimesMs.length,
        ...outcome,
        ...(outcome.error === undefined ? {} : { error: outcome.error.slice(0, MAX_MESSAGE) }),
      });
    };

    let req: http.ClientRequest;
    try {
      req = (secure ? https : http).request(url, {
        method: 'POST',
        agent: secure ? agents.https : agents.http,
        headers: { ...call.headers, 'content-length': Buffer.byteLength(call.body) },
      });
    } catch (e) {
      // A header no HTTP request can carry: nothing was sent.
      const error = e instanceof Error ? e.message : String(e);
      return resolve({ ...who, sentMs, endMs: sentMs, tokenTimesMs, ...noAnswer(error) });
    }
    let status = 0;
    // Past the timeout, a call ends however much of its answer came.
    const late = ctx.timers.at(sentMs + ctx.timeoutMs, () => {
      finish({
        ok: false,
        status,
        reason: 'client_timeout',
        error: `no complete answer within ${ctx.timeoutMs} ms`,
      });
      req.destroy();
    });
    const interrupted = () => {
      finish({ ok: false, status, reason: 'interrupted', error: 'the run was interrupted' });
      req.destroy();
    };
    if (ctx.stop?.aborted) interrupted();
    else ctx.stop?.addEventListener('abort', interrupted, { once: true });
    req.on('error', (e: NodeJS.ErrnoException) =>
      status === 0
        ? finish({ ok: false, status, reason: e.code ?? 'transport', error: e.message })
        : finish({
            ok: false,
            status,
            reason: 'stream_cut',
            error: `${e.code ?? ''} ${e.message}`,
          }),
    );
    req.on('response', (res) => {
      status = res.statusCode ?? 0;
      const id = res.headers['x-goodput-request-id'];
      serverId = typeof id === 'string' ? id : undefined;
      res.setEncoding('utf8');
      if (status !== 200) {
        let text = '';
        res.on('data', (s: string) => {
          if (text.length < MAX_ERROR_BODY) text += s;
        });
        res.on('end', () => finish({ ok: false, status, ...errorOf(text, res.headers) }));
        res.on('error', () => finish({ ok: false, status, ...errorOf(text, res.headers) }));
        return;
      }
      const sse = new SseReader();
      let done = false;
      const take = (payloads: string[]) => {
        const now = ctx.clock.now();
        // A Responses call announced by the event before, in this read: its arguments that
        // follow at once came in the same piece of the reply, one token, not two.
        let announced: string | undefined;
        for (const p of payloads) {
          if (p === '[DONE]') {
            done = true;
            continue;
          }
          let event: StreamEvent;
          try {
            event = JSON.parse(p) as StreamEvent;
          } catch {
            return badStream(`not JSON: ${p}`);
          }
          if (typeof event !== 'object' || event === null || Array.isArray(event)) {
            return badStream(`not a JSON object: ${p}`);
          }
          const e = failureOf(event);
          if (e !== undefined) {
            finish({
              ok: false,
              status,
              reason: String(e.code ?? e.type ?? 'stream_error'),
              error: e.message,
            });
            res.destroy();
            return;
          }
          const samePiece =
            event.type === 'response.function_call_arguments.delta' && event.item_id === announced;
          if (carriesToken(event) && !samePiece) {
            tokenTimesMs.push(now);
            const index = firstChoice(event)?.index;
            tokenChoices?.push(typeof index === 'number' ? index : 0);
          }
          announced =
            event.type === 'response.output_item.added' && event.item?.type === 'function_call'
              ? event.item.id
              : undefined;
          if (event.usage)
            usage = counted(event.usage.prompt_tokens, event.usage.completion_tokens);
          if (event.type === 'response.completed' || event.type === 'response.incomplete') {
            done = true;
            const used = event.response?.usage;
            if (used) usage = counted(used.input_tokens, used.output_tokens);
          }
        }
      };
      const badStream = (error: string) => {
        finish({ ok: false, status, reason: 'bad_stream', error });
        res.destroy();
      };
      // Whatever the server sent, its call ends as its record: the run goes on. `text`: a piece
      // of the body; undefined: its end.
      const read = (text?: string) => {
        try {
          take(text === undefined ? sse.end() : sse.push(text));
        } catch (e) {
          badStream(e instanceof Error ? e.message : String(e));
        }
      };
      res.on('data', read);
      res.on('end', () => {
        read();
        if (done) finish({ ok: true, status });
        else
          finish({
            ok: false,
            status,
            reason: 'stream_cut',
            error: 'the stream ended before its end ([DONE], or the response completed)',
          });
      });
      // A stream that breaks after the server said 200 was cut, whatever the socket's code.
      res.on('error', (e: NodeJS.ErrnoException) =>
        finish({ ok: false, status, reason: 'stream_cut', error: `${e.code ?? ''} ${e.message}` }),
      );
    });
    req.end(call.body);
  });
}

interface StreamChoice {
  readonly index?: number;
  readonly text?: string;
  readonly delta?: {
    readonly content?: string | null;
    readonly reasoning?: string | null;
    readonly reasoning_content?: string | null;
    readonly tool_calls?: readonly unknown[] | null;
  } | null;
}

interface Failure {
  readonly message?: string;
  readonly type?: string;
  readonly code?: string | number | null;
}

/** What a stream's event says failed: a chunk's error, the Responses API's error or failure. */
function failureOf(event: StreamEvent): Failure | undefined {
  if (event.type === 'response.failed') return event.response?.error ?? {};
  if (event.type === 'error') return { message: event.message, code: event.code };
  return event.error ?? undefined;
}

/** A record of a call that could not be sent: `error` says why. */
function noAnswer(error: string): Pick<CallRecord, 'ok' | 'status' | 'outputTokens'> & {
  reason: string;
  error: string;
} {
  return {
    ok: false,
    status: 0,
    outputTokens: 0,
    reason: 'bad_request',
    error: error.slice(0, MAX_MESSAGE),
  };
}

/** A usage's token counts where they are counts (whole, ≥ 0); a server's other values, none. */
function counted(prompt: unknown, completion: unknown): { prompt?: number; completion?: number } {
  const count = (v: unknown) =>
    Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : undefined;
  return { prompt: count(prompt), completion: count(completion) };
}

/** A chunk's first choice, where its `choices` is a list of objects. */
function firstChoice(event: StreamEvent): StreamChoice | undefined {
  const c: unknown = Array.isArray(event.choices) ? event.choices[0] : undefined;
  return typeof c === 'object' && c !== null ? (c as StreamChoice) : undefined;
}

interface StreamEvent {
  /** A Responses API event's type; a chat or text chunk has none. */
  readonly type?: string;
  readonly delta?: string;
  /** A Responses API `error` event's. */
  readonly message?: string;
  readonly code?: string | number | null;
  readonly item?: { readonly type?: string; readonly id?: string };
  readonly item_id?: string;
  readonly response?: {
    readonly usage?: { input_tokens?: number; output_tokens?: number } | null;
    readonly error?: Failure | null;
  };
  readonly choices?: readonly StreamChoice[];
  readonly usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  readonly error?: Failure;
}

/**
 * A chunk that carries output: completions' `text`, or chat's `delta.content` or a reasoning
 * model's thinking (`delta.reasoning`, older `reasoning_content`), not empty: as vLLM's own
 * benchmark counts them, the first token is the first of either. A piece of a tool call is
 * output too: an agent's turn may be nothing else.
 */
function carriesToken(event: StreamEvent): boolean {
  if (event.type !== undefined) return RESPONSE_TOKENS.has(event.type) ? isToken(event) : false;
  const c = firstChoice(event);
  if (c === undefined) return false;
  const d = typeof c.delta === 'object' ? c.delta : undefined;
  const text = c.text ?? (d?.content || d?.reasoning || d?.reasoning_content);
  const calls = d?.tool_calls;
  return (
    (typeof text === 'string' && text.length > 0) || (Array.isArray(calls) && calls.length > 0)
  );
}

/**
 * The Responses API's events that carry output, as chat's chunks do: a delta of text, thinking
 * or a call's arguments, or a call announced (chat's first piece of a call, its name).
 */
const RESPONSE_TOKENS = new Set([
  'response.output_text.delta',
  'response.reasoning_text.delta',
  'response.function_call_arguments.delta',
  'response.output_item.added',
]);

function isToken(event: StreamEvent): boolean {
  if (event.type === 'response.output_item.added') return event.item?.type === 'function_call';
  return typeof event.delta === 'string' && event.delta.length > 0;
}

/** The reason a refusal gives: Goodput's header, else OpenAI's error code or type, else the status. */
function errorOf(
  body: string,
  headers: http.IncomingHttpHeaders,
): { reason: string; error: string } {
  const header = headers['x-goodput-reason'];
  let code: string | undefined;
  let message = body.slice(0, MAX_MESSAGE);
  try {
    const e = (JSON.parse(body) as { error?: { message?: string; code?: unknown; type?: unknown } })
      .error;
    if (e) {
      code = typeof e.code === 'string' ? e.code : typeof e.type === 'string' ? e.type : undefined;
      message = e.message ?? message;
    }
  } catch {
    // Not JSON: the status speaks for it.
  }
  return { reason: typeof header === 'string' ? header : (code ?? 'http_error'), error: message };
}
