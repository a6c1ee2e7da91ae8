/**
 * A request's generations — one per choice (`n`) — as an OpenAI SSE answer: a role chunk per
 * choice (chat), one chunk per token as the engine emits it, tagged with its choice's index (a
 * piece of a tool call's arguments when one is required: openai/filler-tool-call.ts), each
 * choice's last token carrying its finish reason as vLLM's does (a tool call's closing piece in
 * a finish chunk of its own), the usage chunk when asked, then `[DONE]`. Main rule: a
 * client that goes away cancels every choice in the same tick; an injected crash cuts the
 * connection with no terminating chunk, as a dead server would.
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
  usageSoFar,
} from '../openai/chunks.ts';
import { usage, type FinishReason } from '../openai/responses.ts';
import { FillerToolCall } from '../openai/filler-tool-call.ts';
import type { ReplyEnd, ReplyPiece, ResponseBuilder } from '../openai/response-events.ts';
import type { TtftParts } from '../core/observe/request-outcome.ts';
import type { Generation } from './generation.ts';
import { followChoices, type FinishEvent } from './choices.ts';

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
  gens: readonly Generation[],
  head: ChunkHead,
  outgoing: ServerResponse | undefined,
  /** Ends the connection abruptly once what was written is flushed; false if there is none. */
  cutConnection: () => boolean,
  /** The tool call each choice of a chat must answer with, if one is required. */
  calls?: readonly FillerToolCall[],
  /** The Responses answer the tokens build, when the Responses API was asked (one choice). */
  builder?: ResponseBuilder,
): Response {
  const answer = (to: SseSink) => {
    const form =
      builder === undefined
        ? completionEvents(kind as 'chat' | 'text', gens, head, calls)
        : responseEvents(builder, gens[0], calls?.[0]);
    writeEvents(form, gens, head.id, cutConnection, to).catch(to.fail);
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
      for (const gen of gens) gen.cancel();
    },
  });
  return new Response(body, { headers: SSE_HEADERS });
}

/** How generations are written: what opens them, each token, each finish, and the close. */
interface EventForm {
  /** Chat's role chunks, the Responses API's created events; '' for none. */
  readonly opening: string;
  /** `last`: the finish it ends its choice with, when it is the last (vLLM's one chunk). */
  token(choice: number, text: string, last?: FinishEvent['reason']): string;
  /** A choice's finish: its events, each its own write (the same HTTP chunks, not only bytes). */
  finish(choice: number, ev: FinishEvent): string[];
  /** Once every choice has finished, given their finishes in choice order: the last events. */
  close(finishes: readonly FinishEvent[]): string[];
}

/** The opening, every token as the engine emits it, each finish, then the close or the break. */
async function writeEvents(
  form: EventForm,
  gens: readonly Generation[],
  id: string,
  cutConnection: () => boolean,
  to: SseSink,
): Promise<void> {
  if (form.opening !== '') to.write(form.opening);
  const end = await followChoices(gens, {
    token: (choice, text, last) => to.write(form.token(choice, text, last)),
    finished: (choice, ev) => {
      for (const event of form.finish(choice, ev)) to.write(event);
    },
  });
  if (end.end === 'finished') {
    for (const event of form.close(end.finishes)) to.write(event);
    to.end();
  } else if (end.end === 'crash') {
    // No socket to cut (in-process use): fail the body instead. With a socket the answer just
    // stops; the socket's close ends the request.
    if (!cutConnection()) to.fail(new Error(`generation ${id}: injected crash`));
  } else {
    // Ended without a finish: the client left (nothing reads this), or the backend shut down
    // under it.
    to.fail(new Error(`generation ${id} ended before it finished`));
  }
}

/**
 * A chat or text completion's chunks: the role chunks (chat), a chunk per token (a piece of the
 * call when one is required), each choice's finish, the usage when asked, then `[DONE]`.
 */
function completionEvents(
  kind: 'chat' | 'text',
  gens: readonly Generation[],
  head: ChunkHead,
  calls: readonly FillerToolCall[] | undefined,
): EventForm {
  // Each choice's tokens so far, for the usage every chunk carries when asked.
  const sent = head.continuousUsage === true ? gens.map(() => 0) : null;
  const chunk = (choice: number, delta: object, text: string, reason: FinishReason | null) => {
    const used = sent === null ? null : usageSoFar(gens[choice].promptTokens, sent[choice]);
    return sseData(
      kind === 'chat'
        ? chatChunk(head, delta, reason, null, choice, used)
        : textChunk(head, text, reason, null, choice, used),
    );
  };
  const role = { role: 'assistant', content: '' };
  // Choices whose last token carried their finish, as vLLM sends it: no chunk of its own then.
  const finishedWithToken = gens.map(() => false);
  return {
    opening: kind === 'chat' ? gens.map((_, i) => chunk(i, role, '', null)).join('') : '',
    token: (choice, text, last) => {
      const call = calls?.[choice];
      const delta = call === undefined ? { content: text } : { tool_calls: call.piece(text) };
      if (sent !== null) sent[choice]++;
      // A tool call's closing piece still goes in a finish chunk of its own.
      const ends = last !== undefined && call === undefined;
      if (ends) finishedWithToken[choice] = true;
      return chunk(choice, delta, text, ends ? last : null);
    },
    finish: (choice, ev) => {
      if (finishedWithToken[choice]) return [];
      const call = calls?.[choice];
      const closing = call?.finish(ev.reason);
      const reason = call === undefined ? ev.reason : FillerToolCall.finishReason(ev.reason);
      return [chunk(choice, closing === undefined ? {} : { tool_calls: closing }, '', reason)];
    },
    close: (finishes) => {
      if (!head.includeUsage) return [SSE_DONE];
      const completion = finishes.reduce((sum, ev) => sum + ev.completionTokens, 0);
      return [sseData(usageEvent(kind, gens[0], head, completion)), SSE_DONE];
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
    token: (_choice, text) => builder.add(replyPiece(text, call)),
    finish: (_choice, ev) => [builder.finish(replyEnd(gen, ev, call)).events],
    close: () => [],
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

/**
 * The usage chunk: the prompt once, the tokens of every choice, the first choice's prefix-cache
 * hit and TTFT parts (the choice that computed the prompt).
 */
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
