/**
 * The bodies of an admitted request's answer: collected into one OpenAI response, or streamed
 * as SSE chunks (a role chunk, one chunk per token — the upstream's own when it can go as is —
 * the finish, the usage when asked, [DONE]) — with an SSE error event instead of the end when
 * the stream is cut after tokens went out: its code names what cut it (`upstream_error`,
 * `deadline_exceeded`, `shutting_down`).
 */
import {
  SSE_DONE,
  SSE_HEADERS,
  chatChunk,
  chatChoice,
  chatCompletionOf,
  sseData,
  textChoice,
  textChunk,
  textCompletionOf,
  usage,
  usageChunk,
  usageSoFar,
  type ChatDelta,
  type ChunkUsage,
  type FinishReason,
  type ToolCallDelta,
  Logprobs,
  ToolCalls,
} from '../../openai/index.ts';
import type { ApiKind, ReasoningField, Sent, StreamEnd, TokenEvent } from '../backend.ts';
import { wallClock } from '../../runtime/wall-clock.ts';
import { isUpstreamError } from '../backend.ts';
import type { TokenRelay } from './token-relay.ts';
import { TURN_WRITES } from './turn-writes.ts';
import { chunkWriter } from './chunk-frames.ts';
import type { ServerResponse } from 'node:http';
import { finished } from 'node:stream';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { StoredResponse } from '../shared/shared-store.ts';
import { isRequestStopped, type StopCause } from '../stop.ts';

export type Head = { readonly id: string; readonly created: number; readonly model: string };

/** One choice's reply as its tokens come: its text, thinking, calls, scores and finish. */
class Reply {
  text = '';
  reasoning: { field: ReasoningField; text: string } | undefined;
  readonly calls = new ToolCalls();
  readonly scores = new Logprobs();
  finish: FinishReason | undefined;

  add(t: TokenEvent): void {
    this.text += t.text;
    if (t.reasoning !== undefined) {
      if (this.reasoning === undefined) this.reasoning = { ...t.reasoning };
      else this.reasoning.text += t.reasoning.text;
    }
    if (t.toolCalls !== undefined) this.calls.add(t.toolCalls);
    if (t.logprobs !== undefined) this.scores.add(t.logprobs);
    if (t.finish?.toolCalls !== undefined) this.calls.add(t.finish.toolCalls);
    if (t.finish !== undefined) this.finish = t.finish.reason as FinishReason;
  }

  chat(index: number, finish: FinishReason) {
    const extras = { reasoning: this.reasoning, toolCalls: this.calls.whole() };
    return chatChoice(index, this.text, finish, { ...extras, logprobs: this.scores.whole() });
  }

  completion(index: number, finish: FinishReason) {
    return textChoice(index, this.text, finish, this.scores.whole());
  }
}

/** The whole answer: each choice's reply (one for most requests), the usage, the degraded mark. */
export async function wholeResponse(
  kind: ApiKind,
  head: Head,
  relay: TokenRelay,
  done: Promise<StreamEnd>,
  degradeLevel: number | undefined,
) {
  const replies = [new Reply()];
  // Nothing is written before the end: a token is "sent" as it is collected.
  relay.drainTo((t, sent) => {
    const c = t.choice ?? 0;
    while (replies.length <= c) replies.push(new Reply());
    replies[c].add(t);
    sent?.(wallClock.now());
  });
  const end = await done;
  while (replies.length < (end.choices ?? 1)) replies.push(new Reply());
  if (end.finishToolCalls !== undefined) replies[0].calls.add(end.finishToolCalls);
  const used = usage(end.promptTokens, end.completionTokens, end.cachedTokens);
  // One choice ends with the stream; each of several, with its own finish.
  const finishOf = (r: Reply) => r.finish ?? (end.finishReason as FinishReason);
  const body =
    kind === 'chat'
      ? chatCompletionOf(
          head,
          replies.map((r, i) => r.chat(i, finishOf(r))),
          used,
        )
      : textCompletionOf(
          head,
          replies.map((r, i) => r.completion(i, finishOf(r))),
          used,
        );
  return { ...body, ...degradedMark(degradeLevel) };
}

/** What marks an answer served degraded, at the level it was: nothing when it was not. */
export function degradedMark(level: number | undefined): object {
  return level === undefined ? {} : { goodput: { degraded: true, degrade_level: level } };
}

/**
 * Where an SSE answer's bytes go; `write` calls `sent` once the chunk has left (or can't), `end`
 * calls back once the last of them has.
 */
interface ByteSink {
  write(chunk: Uint8Array, sent?: Sent): void;
  end(flushed: () => void): void;
}

/**
 * How an answer's stream is written: what opens it, each token, and its end — the closing
 * events, or the event that says what cut it.
 */
export interface StreamForm {
  opening(): string;
  token(t: TokenEvent): string | Uint8Array;
  closing(end: StreamEnd): string;
  failure(e: unknown): string;
}

/**
 * A chat or text completion's stream: the role chunk (chat), a chunk per token — the upstream's
 * own when it can go as is — the finish (marked when degraded), the usage when asked, [DONE].
 * Of several `choices`: a role chunk for each, each token under its choice's index, and each
 * choice's finish as it ends. Cut after tokens went out, as vLLM ends a failed stream: the error
 * event, then [DONE].
 */
export function completionForm(
  kind: ApiKind,
  head: Head,
  withUsage: boolean,
  degradeLevel: number | undefined,
  choices = 1,
  /** The prompt's tokens, when every chunk is to carry the usage so far (vLLM's). */
  continuousPrompt?: number,
): StreamForm {
  const chunkHead = { ...head, includeUsage: withUsage };
  const role = { role: 'assistant', content: '' } as const;
  // Each choice's tokens so far. A server's own chunk, forwarded, carries its own usage.
  const sent = continuousPrompt === undefined ? null : new Array<number>(choices).fill(0);
  const used = (choice = 0) =>
    sent === null ? null : usageSoFar(continuousPrompt as number, sent[choice] ?? 0);
  return {
    opening: () =>
      kind === 'chat'
        ? Array.from({ length: choices }, (_, i) =>
            sseData(chatChunk(chunkHead, role, null, null, i, used(i))),
          ).join('')
        : '',
    token: (t) => {
      if (t.finish !== undefined)
        return finishEvent(
          kind,
          chunkHead,
          t.finish.reason,
          t.finish.toolCalls,
          degradeLevel,
          t.choice,
          used(t.choice),
        );
      if (sent !== null) sent[t.choice ?? 0]++;
      return (
        t.sse ??
        sseData(
          kind === 'chat'
            ? chatChunk(chunkHead, chatDelta(t), null, t.logprobs, t.choice, used(t.choice))
            : textChunk(chunkHead, t.text, null, t.logprobs, t.choice, used(t.choice)),
        )
      );
    },
    closing: (end) => closingEvents(kind, chunkHead, end, degradeLevel, used(0)),
    failure: (e) => sseData(streamError(e)) + SSE_DONE,
  };
}

export interface StreamAnswer {
  readonly form: StreamForm;
  readonly relay: TokenRelay;
  readonly done: Promise<StreamEnd>;
  readonly extra: Record<string, string>;
  /** Keep the bytes written, for replay under the request's Idempotency-Key. */
  readonly keep: boolean;
  /**
   * The request is over: `end` when the stream ran to its end, and then — when kept — the
   * answer as it went out.
   */
  readonly onEnd: (end?: StreamEnd, answer?: StoredResponse) => Promise<void>;
  /**
   * The answer's last byte has gone to the client (or the connection is gone): nothing of the
   * request remains. A drain waits for this, so a server closing behind it cuts no answer short.
   */
  readonly onFlushed: () => void;
  /** The client stopped reading: stop the upstream. */
  readonly onCancel: () => void;
  /** Node's response, when Node serves the request. */
  readonly outgoing: ServerResponse | undefined;
}

/**
 * The SSE answer. Tokens are written as the backend delivers them (a stream's output is bounded
 * by its max_tokens, so a slow reader costs memory, never the upstream's pace); the end goes out
 * after `onEnd` has released the request, so the client's next request finds its slot free.
 * `done` settles however the stream ends — a client gone before it reads the body included,
 * since the upstream is stopped then — so `onEnd` is called from its handlers alone.
 *
 * Served by Node (`outgoing` given), the bytes go straight to Node's response: no web stream
 * and no promise per token between the upstream's socket and the client's. A client gone is
 * then seen by the request's abort signal, which stops the upstream. Elsewhere (a fetch-style
 * runtime) the answer is a web stream, and a client that stops reading cancels it.
 */
export function streamResponse(a: StreamAnswer): Response {
  const headers = { ...SSE_HEADERS, ...a.extra };
  const answer = (to: ByteSink) => writeAnswer(a.keep ? kept(to) : to, a);
  const outgoing = a.outgoing;
  if (outgoing !== undefined) {
    outgoing.writeHead(200, headers);
    const chunks = chunkWriter(outgoing);
    const open = () => !outgoing.destroyed && !outgoing.writableEnded;
    // The role chunk and the tokens held for the answer (the first) go out at once; later
    // tokens at the end of the loop's turn, behind other streams' first tokens (turn-writes.ts).
    let first = true;
    answer({
      write: (chunk, sent) => {
        if (!open()) return sent?.(wallClock.now());
        if (!first) TURN_WRITES.hold(outgoing.socket, sent);
        chunks.write(chunk);
        if (first) sent?.(wallClock.now());
      },
      end: (flushed) => {
        finished(outgoing, () => flushed());
        if (open()) chunks.end();
      },
    });
    first = false;
    return RESPONSE_ALREADY_SENT;
  }
  let open = true;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      answer({
        write: (chunk, sent) => {
          if (open) controller.enqueue(chunk);
          sent?.(wallClock.now());
        },
        end: (flushed) => {
          if (open) controller.close();
          open = false;
          flushed();
        },
      });
    },
    // The upstream's stop settles `done`, whose handler ends the request.
    cancel() {
      open = false;
      a.onCancel();
    },
  });
  return new Response(body, { status: 200, headers });

  /** A sink that also keeps what it writes, for a replay of this very answer. */
  function kept(to: ByteSink): ByteSink & { readonly bytes: Uint8Array[] } {
    const bytes: Uint8Array[] = [];
    return {
      bytes,
      write: (chunk, sent) => {
        bytes.push(chunk);
        to.write(chunk, sent);
      },
      end: (flushed) => to.end(flushed),
    };
  }
}

/** The opening, every token as it comes, then the closing events or an error event. */
function writeAnswer(to: ByteSink & { readonly bytes?: Uint8Array[] }, a: StreamAnswer): void {
  const form = a.form;
  // The end goes out only after the request is released (and its answer kept), so a client's
  // next request finds its slot free and a replay finds the answer.
  const close = async (last: string, end?: StreamEnd) => {
    const tail = Buffer.from(last);
    const answer =
      end === undefined || to.bytes === undefined
        ? undefined
        : {
            status: 200,
            body: Buffer.concat([...to.bytes, tail]).toString('utf8'),
            headers: { ...SSE_HEADERS, ...a.extra },
          };
    await a.onEnd(end, answer);
    to.write(tail);
    to.end(a.onFlushed);
  };
  const opening = form.opening();
  if (opening !== '') to.write(Buffer.from(opening));
  a.relay.drainTo((t, sent) => {
    const out = form.token(t);
    // Buffer.from slices Node's pool for small strings: no allocation per token.
    to.write(typeof out === 'string' ? Buffer.from(out) : out, sent);
  });
  a.done.then(
    (end) => close(form.closing(end), end),
    // After tokens went out nothing is retried: the client gets the event that says why.
    (e: unknown) => close(form.failure(e)),
  );
}

/**
 * A token as a chat chunk's delta: its thinking under the field it came in, its reply, and its
 * pieces of tool calls.
 */
function chatDelta(t: TokenEvent): ChatDelta {
  if (t.reasoning === undefined && t.toolCalls === undefined) return { content: t.text };
  return {
    ...(t.reasoning === undefined ? {} : { [t.reasoning.field]: t.reasoning.text }),
    ...(t.text === '' ? {} : { content: t.text }),
    ...(t.toolCalls === undefined ? {} : { tool_calls: t.toolCalls }),
  };
}

/** What cut a stream short, as the code and message of the event that ends it. */
export function cutShort(e: unknown): { readonly code: string; readonly message: string } {
  if (isRequestStopped(e)) return { code: e.why, message: STOPPED[e.why] };
  if (isUpstreamError(e))
    return { code: 'upstream_error', message: 'the upstream failed mid-stream' };
  return { code: 'internal_error', message: 'the stream failed' };
}

/** The SSE error event that ends a stream cut short, naming what cut it. */
function streamError(e: unknown) {
  const { code, message } = cutShort(e);
  return { error: { message, type: 'server_error', param: null, code } };
}

const STOPPED: Readonly<Record<StopCause, string>> = {
  client_closed: 'the client closed the request',
  deadline_exceeded: "the request's deadline passed mid-stream",
  shutting_down: 'the gateway shut down before the stream ended',
  handed_over: 'the gateway drained and handed the request to another replica',
};

type ChunkHead = Head & { readonly includeUsage: boolean };

/** A choice's finish chunk, closing its tool call when it has one, marked when degraded. */
function finishEvent(
  kind: ApiKind,
  chunkHead: ChunkHead,
  reason: string,
  toolCalls: readonly ToolCallDelta[] | undefined,
  degradeLevel: number | undefined,
  choice = 0,
  used: ChunkUsage | null = null,
): string {
  const finish = reason as FinishReason;
  const closing = toolCalls === undefined ? {} : { tool_calls: toolCalls };
  const last =
    kind === 'chat'
      ? chatChunk(chunkHead, closing, finish, null, choice, used)
      : textChunk(chunkHead, '', finish, null, choice, used);
  return sseData({ ...last, ...degradedMark(degradeLevel) });
}

/**
 * The finish chunk (of several choices, each went as it ended), the usage chunk when asked, and
 * [DONE].
 */
function closingEvents(
  kind: ApiKind,
  chunkHead: ChunkHead,
  end: StreamEnd,
  degradeLevel: number | undefined,
  used: ChunkUsage | null,
): string {
  const { finishReason, finishToolCalls } = end;
  let out =
    end.choices === undefined
      ? finishEvent(kind, chunkHead, finishReason, finishToolCalls, degradeLevel, 0, used)
      : '';
  if (chunkHead.includeUsage) {
    const object = kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
    const used = usage(end.promptTokens, end.completionTokens, end.cachedTokens);
    out += sseData(usageChunk(object, chunkHead, used));
  }
  return out + SSE_DONE;
}
