/**
 * A generation as an OpenAI SSE answer: a role chunk (chat), one chunk per token as the engine
 * emits it (a piece of a tool call's arguments when one is required: openai/filler-tool-call.ts),
 * a chunk with the finish reason, the usage chunk when asked, then `[DONE]`. Main
 * rule: a client that goes away cancels the generation in the same tick; an injected crash cuts
 * the connection with no terminating chunk, as a dead server would.
 *
 * Served by Node (`outgoing` given), the bytes go straight to Node's response, as the gateway
 * writes its own: no web stream between the engine and the socket, so the yardstick the
 * gateway's overhead is measured against costs little and adds little noise. A client gone is
 * then seen by the request's abort signal, which the route ties to the generation. In-process
 * (`app.request`), the answer is a web stream, and a reader that cancels it cancels the
 * generation.
 */
import type { ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import {
  chatChunk,
  type ChunkHead,
  SSE_DONE,
  SSE_HEADERS,
  sseData,
  textChunk,
  usageChunk,
} from '../openai/chunks.ts';
import { usage, type FinishReason } from '../openai/responses.ts';
import { FillerToolCall } from '../openai/filler-tool-call.ts';
import type { ReplyEnd, ReplyPiece, ResponseBuilder } from '../openai/response-events.ts';
import type { TtftParts } from '../core/observe/request-outcome.ts';
import type { Generation, GenerationEvent } from './generation.ts';

/** The API asked: chat, text, or the Responses API (the chat it is, answered as its items). */
export type CompletionKind = 'chat' | 'text' | 'responses';

/** Where an SSE answer's bytes go. Each call after the answer ended or broke is a no-op. */
interface SseSink {
  write(event: string): void;
  end(): void;
  /** The answer broke: the client must see a broken stream, not a complete one. */
  fail(reason: unknown): void;
}

const encoder = new TextEncoder();

export function sseResponse(
  kind: CompletionKind,
  gen: Generation,
  head: ChunkHead,
  outgoing: ServerResponse | undefined,
  /** Ends the connection abruptly once what was written is flushed; false if there is none. */
  cutConnection: () => boolean,
  /** The tool call a chat must answer with, if one is required. */
  call?: FillerToolCall,
  /** The Responses answer the tokens build, when the Responses API was asked. */
  builder?: ResponseBuilder,
): Response {
  const answer = (to: SseSink) => {
    const form =
      builder === undefined
        ? completionEvents(kind as 'chat' | 'text', gen, head, call)
        : responseEvents(builder, gen, call);
    writeEvents(form, gen, cutConnection, to).catch(to.fail);
  };
  if (outgoing !== undefined) {
    outgoing.writeHead(200, SSE_HEADERS);
    // Written without waiting for 'drain': a stream's output is bounded by its max_tokens, so a
    // slow reader costs memory, never the engine's pace (the gateway writes the same way).
    const open = () => !outgoing.destroyed && !outgoing.writableEnded;
    answer({
      write: (event) => open() && outgoing.write(event),
      end: () => open() && outgoing.end(),
      fail: () => outgoing.destroy(),
    });
    return RESPONSE_ALREADY_SENT;
  }
  let open = true;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      answer({
        write: (event) => open && c.enqueue(encoder.encode(event)),
        end: () => {
          if (open) c.close();
          open = false;
        },
        fail: (reason) => {
          if (open) c.error(reason);
          open = false;
        },
      });
    },
    cancel() {
      open = false;
      gen.cancel();
    },
  });
  return new Response(body, { headers: SSE_HEADERS });
}

/** How a generation is written: what opens it, each token, and the events of its finish. */
interface EventForm {
  /** Chat's role chunk, the Responses API's created events; '' for none. */
  readonly opening: string;
  token(text: string): string;
  /** The finish's events, each its own write: the same HTTP chunks, not only the same bytes. */
  finish(ev: Extract<GenerationEvent, { type: 'finish' }>): string[];
}

/** The opening, every token as the engine emits it, then the finish's events or the break. */
async function writeEvents(
  form: EventForm,
  gen: Generation,
  cutConnection: () => boolean,
  to: SseSink,
): Promise<void> {
  if (form.opening !== '') to.write(form.opening);
  for await (const ev of gen) {
    if (ev.type === 'token') {
      to.write(form.token(ev.text));
    } else if (ev.type === 'finish') {
      for (const event of form.finish(ev)) to.write(event);
      to.end();
      return;
    } else {
      // No socket to cut (in-process use): fail the body instead. With a socket the answer
      // just stops; the socket's close ends the request.
      if (!cutConnection()) to.fail(new Error(`generation ${gen.id}: injected crash`));
      return;
    }
  }
  // Ended without a finish: the client left (nothing reads this), or the backend shut down
  // under it.
  to.fail(new Error(`generation ${gen.id} ended before it finished`));
}

/**
 * A chat or text completion's chunks: the role chunk (chat), a chunk per token (a piece of the
 * call when one is required), the finish, the usage when asked, then `[DONE]`.
 */
function completionEvents(
  kind: 'chat' | 'text',
  gen: Generation,
  head: ChunkHead,
  call: FillerToolCall | undefined,
): EventForm {
  const chunk = (delta: object, text: string, reason: FinishReason | null) =>
    sseData(kind === 'chat' ? chatChunk(head, delta, reason) : textChunk(head, text, reason));
  return {
    opening:
      kind === 'chat' ? sseData(chatChunk(head, { role: 'assistant', content: '' }, null)) : '',
    token: (text) =>
      chunk(call === undefined ? { content: text } : { tool_calls: call.piece(text) }, text, null),
    finish: (ev) => {
      const closing = call?.finish(ev.reason);
      const reason = call === undefined ? ev.reason : FillerToolCall.finishReason(ev.reason);
      const last = chunk(closing === undefined ? {} : { tool_calls: closing }, '', reason);
      const used = head.includeUsage
        ? [sseData(usageEvent(kind, gen, head, ev.completionTokens))]
        : [];
      return [last, ...used, SSE_DONE];
    },
  };
}

/** The Responses API's events: the response created, a delta per token, its end. */
function responseEvents(
  builder: ResponseBuilder,
  gen: Generation,
  call: FillerToolCall | undefined,
): EventForm {
  return {
    opening: builder.opening(),
    token: (text) => builder.add(replyPiece(text, call)),
    finish: (ev) => [builder.finish(replyEnd(gen, ev, call)).events],
  };
}

/** A token as the Responses builder takes it: its text, or a piece of the call required. */
export function replyPiece(text: string, call: FillerToolCall | undefined): ReplyPiece {
  return call === undefined ? { text } : { text: '', toolCalls: call.piece(text) };
}

/** The generation's end as the Responses builder takes it: a stop closes the call required. */
export function replyEnd(
  gen: Generation,
  ev: { readonly reason: string; readonly completionTokens: number },
  call: FillerToolCall | undefined,
): ReplyEnd {
  return {
    finishReason: call === undefined ? ev.reason : FillerToolCall.finishReason(ev.reason),
    promptTokens: gen.promptTokens,
    completionTokens: ev.completionTokens,
    cachedTokens: gen.cachedTokens,
    finishToolCalls: call?.finish(ev.reason),
  };
}

function usageEvent(kind: CompletionKind, gen: Generation, head: ChunkHead, completion: number) {
  const object = kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
  const used = usageChunk(object, head, usage(gen.promptTokens, completion, gen.cachedTokens));
  const parts = gen.ttftParts();
  return parts === undefined ? used : { ...used, timings: wireTimings(parts) };
}

/**
 * The engine's extension to the usage chunk: how it spent the request's TTFT, in ms, so a
 * gateway in front can split TTFT into queue, prefill and first decode. Clients ignore it.
 */
function wireTimings(p: TtftParts) {
  return { queue_ms: p.queueMs, prefill_ms: p.prefillMs, first_decode_ms: p.firstDecodeMs };
}
