/**
 * A generation as an OpenAI SSE body: a role chunk (chat), one chunk per token as the engine
 * emits it, a chunk with the finish reason, the usage chunk when asked, then `[DONE]`. The body
 * pulls one event at a time, so a slow client leaves tokens queued in the backend rather than
 * in socket buffers. Main rule: a client that goes away cancels the generation in the same
 * tick; an injected crash cuts the connection with no terminating chunk, as a dead server would.
 */
import {
  chatChunk,
  type ChunkHead,
  SSE_DONE,
  sseData,
  textChunk,
  usageChunk,
} from '../openai/chunks.ts';
import { usage } from '../openai/responses.ts';
import type { TtftParts } from '../core/observe/request-outcome.ts';
import type { Generation } from './generation.ts';

export type CompletionKind = 'chat' | 'text';

const encoder = new TextEncoder();

export function sseBody(
  kind: CompletionKind,
  gen: Generation,
  head: ChunkHead,
  /** Ends the connection abruptly once what was written is flushed; false if there is none. */
  cutConnection: () => boolean,
): ReadableStream<Uint8Array> {
  const events = gen[Symbol.asyncIterator]();
  const send = (c: ReadableStreamDefaultController<Uint8Array>, payload: unknown) =>
    c.enqueue(encoder.encode(sseData(payload)));
  const object = kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
  return new ReadableStream<Uint8Array>({
    start(c) {
      if (kind === 'chat') send(c, chatChunk(head, { role: 'assistant', content: '' }, null));
    },
    async pull(c) {
      const r = await events.next();
      if (r.done) {
        // Ended without a finish: the backend shut down under it. Fail the body so the
        // client sees a broken stream, not a complete one.
        c.error(new Error(`generation ${gen.id} ended before it finished`));
        return;
      }
      const ev = r.value;
      if (ev.type === 'token') {
        send(
          c,
          kind === 'chat'
            ? chatChunk(head, { content: ev.text }, null)
            : textChunk(head, ev.text, null),
        );
      } else if (ev.type === 'finish') {
        send(c, kind === 'chat' ? chatChunk(head, {}, ev.reason) : textChunk(head, '', ev.reason));
        if (head.includeUsage) {
          const parts = gen.ttftParts();
          const used = usageChunk(object, head, usage(gen.promptTokens, ev.completionTokens));
          send(c, parts === undefined ? used : { ...used, timings: wireTimings(parts) });
        }
        c.enqueue(encoder.encode(SSE_DONE));
        c.close();
      } else if (!cutConnection()) {
        // No socket to cut (in-process use): fail the body instead. With a socket the body
        // just stops; the socket's close cancels it.
        c.error(new Error(`generation ${gen.id}: injected crash`));
      }
    },
    cancel() {
      gen.cancel();
      void events.return?.();
    },
  });
}

/**
 * The engine's extension to the usage chunk: how it spent the request's TTFT, in ms, so a
 * gateway in front can split TTFT into queue, prefill and first decode. Clients ignore it.
 */
function wireTimings(p: TtftParts) {
  return { queue_ms: p.queueMs, prefill_ms: p.prefillMs, first_decode_ms: p.firstDecodeMs };
}
