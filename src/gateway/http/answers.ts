/**
 * The bodies of an admitted request's answer: collected into one OpenAI response, or streamed
 * as SSE chunks (a role chunk, one chunk per token, the finish, the usage when asked, [DONE])
 * — with an SSE error event instead of the end when the upstream fails after tokens went out.
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
import type { ApiKind, UpstreamEvent } from '../backend.ts';
import { isUpstreamError } from '../backend.ts';

/** Every answer names the request, so its decision record can be looked up. */
export function tagged(res: Response, requestId: string): Response {
  res.headers.set('x-goodput-request-id', requestId);
  return res;
}

export type Head = { readonly id: string; readonly created: number; readonly model: string };

export async function wholeResponse(
  kind: ApiKind,
  head: Head,
  first: IteratorResult<UpstreamEvent>,
  events: AsyncIterator<UpstreamEvent>,
  degradeLevel: number | undefined,
) {
  let text = '';
  let end: Extract<UpstreamEvent, { type: 'end' }> | undefined;
  for (let r = first; !r.done; r = await events.next()) {
    if (r.value.type === 'token') text += r.value.text;
    else end = r.value;
  }
  const finish = (end?.finishReason ?? 'stop') as FinishReason;
  const used = usage(end?.promptTokens ?? 0, end?.completionTokens ?? 0);
  const body =
    kind === 'chat'
      ? chatCompletion(head, text, finish, used)
      : textCompletion(head, text, finish, used);
  return degradeLevel === undefined
    ? body
    : { ...body, goodput: { degraded: true, degrade_level: degradeLevel } };
}

export function streamResponse(
  kind: ApiKind,
  head: Head,
  withUsage: boolean,
  first: IteratorResult<UpstreamEvent>,
  events: AsyncIterator<UpstreamEvent>,
  extra: Record<string, string>,
  degradeLevel: number | undefined,
  onEnd: () => Promise<void>,
): Response {
  const encoder = new TextEncoder();
  const chunkHead = { ...head, includeUsage: withUsage };
  let pending: IteratorResult<UpstreamEvent> | null = first;
  let opened = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const out: string[] = [];
      if (!opened && kind === 'chat')
        out.push(sseData(chatChunk(chunkHead, { role: 'assistant', content: '' }, null)));
      opened = true;
      let r: IteratorResult<UpstreamEvent>;
      try {
        r = pending ?? (await events.next());
      } catch (e) {
        // After tokens went out nothing is retried: the client gets an error event and the end.
        const message = isUpstreamError(e) ? 'the upstream failed mid-stream' : 'the stream failed';
        out.push(
          sseData({
            error: { message, type: 'server_error', param: null, code: 'upstream_error' },
          }),
        );
        await onEnd();
        controller.enqueue(encoder.encode(out.join('')));
        controller.close();
        return;
      }
      pending = null;
      if (r.done) {
        // Released before the client sees the end, so its next request finds the slot free.
        await onEnd();
        controller.enqueue(encoder.encode(out.join('') + SSE_DONE));
        controller.close();
        return;
      }
      const ev = r.value;
      if (ev.type === 'token') {
        out.push(
          ev.sse ??
            sseData(
              kind === 'chat'
                ? chatChunk(chunkHead, { content: ev.text }, null)
                : textChunk(chunkHead, ev.text, null),
            ),
        );
      } else {
        const finish = ev.finishReason as FinishReason;
        const last =
          kind === 'chat' ? chatChunk(chunkHead, {}, finish) : textChunk(chunkHead, '', finish);
        out.push(
          sseData(
            degradeLevel === undefined
              ? last
              : { ...last, goodput: { degraded: true, degrade_level: degradeLevel } },
          ),
        );
        if (withUsage) {
          const object = kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
          out.push(
            sseData(usageChunk(object, chunkHead, usage(ev.promptTokens, ev.completionTokens))),
          );
        }
      }
      controller.enqueue(encoder.encode(out.join('')));
    },
    async cancel() {
      try {
        await events.return?.(undefined);
      } finally {
        await onEnd();
      }
    },
  });
  return new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...extra } });
}
