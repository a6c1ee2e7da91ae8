/**
 * The bodies of an admitted request's answer: collected into one OpenAI response, or streamed
 * as SSE chunks (a role chunk, one chunk per token — the upstream's own when it can go as is —
 * the finish, the usage when asked, [DONE]) — with an SSE error event instead of the end when
 * the upstream fails after tokens went out.
 */
import {
  SSE_DONE,
  SSE_HEADERS,
  chatChunk,
  chatCompletion,
  sseData,
  textChunk,
  textCompletion,
  usage,
  usageChunk,
  type FinishReason,
} from '../../openai/index.ts';
import type { ApiKind, StreamEnd } from '../backend.ts';
import { isUpstreamError } from '../backend.ts';
import type { TokenRelay } from './token-relay.ts';
import type { ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';

/** Every answer names the request, so its decision record can be looked up. */
export function tagged(res: Response, requestId: string): Response {
  res.headers.set('x-goodput-request-id', requestId);
  return res;
}

export type Head = { readonly id: string; readonly created: number; readonly model: string };

export async function wholeResponse(
  kind: ApiKind,
  head: Head,
  relay: TokenRelay,
  done: Promise<StreamEnd>,
  degradeLevel: number | undefined,
) {
  let text = '';
  relay.drainTo((t) => (text += t.text));
  const end = await done;
  const finish = end.finishReason as FinishReason;
  const used = usage(end.promptTokens, end.completionTokens);
  const body =
    kind === 'chat'
      ? chatCompletion(head, text, finish, used)
      : textCompletion(head, text, finish, used);
  return degradeLevel === undefined
    ? body
    : { ...body, goodput: { degraded: true, degrade_level: degradeLevel } };
}

/** Where an SSE answer's bytes go. */
interface ByteSink {
  write(chunk: Uint8Array): void;
  end(): void;
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
export function streamResponse(
  kind: ApiKind,
  head: Head,
  withUsage: boolean,
  relay: TokenRelay,
  done: Promise<StreamEnd>,
  extra: Record<string, string>,
  degradeLevel: number | undefined,
  /** The request is over; `end` when the stream ran to its end. */
  onEnd: (end?: StreamEnd) => Promise<void>,
  /** The client stopped reading: stop the upstream. */
  onCancel: () => void,
  outgoing: ServerResponse | undefined,
): Response {
  const headers = { ...SSE_HEADERS, ...extra };
  const answer = (to: ByteSink) =>
    writeAnswer(to, kind, { ...head, includeUsage: withUsage }, relay, done, degradeLevel, onEnd);
  if (outgoing !== undefined) {
    outgoing.writeHead(200, headers);
    const open = () => !outgoing.destroyed && !outgoing.writableEnded;
    answer({
      write: (chunk) => open() && outgoing.write(chunk),
      end: () => open() && outgoing.end(),
    });
    return RESPONSE_ALREADY_SENT;
  }
  let open = true;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      answer({
        write: (chunk) => open && controller.enqueue(chunk),
        end: () => {
          if (open) controller.close();
          open = false;
        },
      });
    },
    // The upstream's stop settles `done`, whose handler ends the request.
    cancel() {
      open = false;
      onCancel();
    },
  });
  return new Response(body, { status: 200, headers });
}

/** The role chunk, every token as it comes, then the closing events or an error event. */
function writeAnswer(
  to: ByteSink,
  kind: ApiKind,
  chunkHead: Head & { readonly includeUsage: boolean },
  relay: TokenRelay,
  done: Promise<StreamEnd>,
  degradeLevel: number | undefined,
  onEnd: (end?: StreamEnd) => Promise<void>,
): void {
  // Buffer.from slices Node's pool for small strings: no allocation per token.
  const send = (text: string) => to.write(Buffer.from(text));
  const close = async (last: string, end?: StreamEnd) => {
    await onEnd(end);
    send(last);
    to.end();
  };
  if (kind === 'chat')
    send(sseData(chatChunk(chunkHead, { role: 'assistant', content: '' }, null)));
  relay.drainTo((t) => {
    if (t.sse !== undefined) return to.write(t.sse);
    send(
      sseData(
        kind === 'chat'
          ? chatChunk(chunkHead, { content: t.text }, null)
          : textChunk(chunkHead, t.text, null),
      ),
    );
  });
  done.then(
    (end) => close(closingEvents(kind, chunkHead, end, degradeLevel), end),
    // After tokens went out nothing is retried: the client gets an error event and the end.
    (e: unknown) => {
      const message = isUpstreamError(e) ? 'the upstream failed mid-stream' : 'the stream failed';
      return close(
        sseData({ error: { message, type: 'server_error', param: null, code: 'upstream_error' } }),
      );
    },
  );
}

/** The finish chunk (marked when degraded), the usage chunk when asked, and [DONE]. */
function closingEvents(
  kind: ApiKind,
  chunkHead: Head & { readonly includeUsage: boolean },
  end: StreamEnd,
  degradeLevel: number | undefined,
): string {
  const finish = end.finishReason as FinishReason;
  const last =
    kind === 'chat' ? chatChunk(chunkHead, {}, finish) : textChunk(chunkHead, '', finish);
  let out = sseData(
    degradeLevel === undefined
      ? last
      : { ...last, goodput: { degraded: true, degrade_level: degradeLevel } },
  );
  if (chunkHead.includeUsage) {
    const object = kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
    out += sseData(usageChunk(object, chunkHead, usage(end.promptTokens, end.completionTokens)));
  }
  return out + SSE_DONE;
}
