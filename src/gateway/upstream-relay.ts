/**
 * An HTTP upstream's SSE body read into the backend contract's tokens and end (`backend.ts`):
 * tokens go out from the body's `data` events themselves, no promise per token. A token chunk
 * whose bytes the gateway would write is forwarded as it came. A request for several choices
 * (`n`) has each choice's tokens tagged with it and each choice's finish told as it comes. Its
 * figures are checked, not trusted: a backend that goes past the output cap asked of it is cut
 * there, and a body that ends with neither a finish nor `[DONE]` was cut short.
 */
import { StringDecoder } from 'node:string_decoder';
import type { IncomingMessage } from 'node:http';
import {
  UpstreamError,
  type StreamEnd,
  type TokenEvent,
  type TokenSink,
  type UpstreamCall,
} from './backend.ts';
import { SseReader } from '../openai/sse-reader.ts';
import { choiceCount, includeUsage } from '../openai/request-fields.ts';
import { answerId } from '../openai/responses.ts';
import { TokenShapes } from './token-chunk-shape.ts';
import {
  asIs,
  chunkToken,
  counted,
  eachChoice,
  forwardedData,
  frame,
  isErrorEvent,
  promptUsage,
  ttftParts,
  type UpstreamChunk,
} from './upstream-chunk.ts';
import { TURN_WRITES } from './http/turn-writes.ts';

/** Thrown by a token past the output cap: the stream ends there, as `length`. */
const PAST_CAP = new Error('a token past the output cap');

/** Reads `res`, the 2xx answer of backend `name` to `call`, into `onToken` and the end. */
export function relayStream(
  name: string,
  res: IncomingMessage,
  call: UpstreamCall,
  onToken: TokenSink,
): Promise<StreamEnd> {
  const forwardable = {
    id: answerId(call.kind, call.id),
    model: call.body.model,
  };
  const reader = new SseReader();
  let tokens = 0;
  let finishReason: string | undefined;
  let done = false;
  let usage: UpstreamChunk['usage'];
  let timings: UpstreamChunk['timings'];
  const withUsage = includeUsage(call.body);
  // The output cap asked of it, each choice's. Each token event carries at least one token, so a
  // backend that sends more events than this for a choice has gone past it: the stream is cut.
  const cap = counted(call.body.max_completion_tokens ?? call.body.max_tokens) ?? Infinity;
  const choices = choiceCount(call.body);
  const several = choices > 1 ? new Array<number>(choices).fill(0) : null;
  const chosen = several === null ? {} : { choices };
  // Learnt from the first token chunks fit to forward: the next are read by their bytes.
  const shapes = new TokenShapes(call.kind === 'chat' ? 'content' : 'text');
  const token = (t: TokenEvent) => {
    const c = t.choice ?? 0;
    if (several !== null && !(c < choices))
      throw new Error(`it sent choice ${c} of a request for ${choices}`);
    if (t.finish !== undefined) {
      if (c === 0) finishReason = t.finish.reason;
      return onToken(t);
    }
    if (t.text === '' && !t.reasoning && !t.toolCalls && !t.logprobs) return;
    if (several === null ? tokens === cap : several[c]++ === cap) throw PAST_CAP;
    tokens++;
    onToken(t);
  };
  const take = (events: string[]) => {
    for (const data of events) {
      if (data === '[DONE]') {
        done = true;
        continue;
      }
      const known = shapes.read(data);
      if (known !== undefined) {
        token(known);
        continue;
      }
      const chunk = JSON.parse(data) as UpstreamChunk;
      if (isErrorEvent(chunk)) throw new Error(`it sent an error event: ${data.slice(0, 200)}`);
      if (chunk.usage) usage = chunk.usage;
      if (chunk.timings) timings = chunk.timings;
      if (several !== null) {
        // Each choice's chunks are rebuilt by the gateway, under their index.
        eachChoice(chunk, call.kind, token);
        continue;
      }
      const choice = chunk.choices?.[0];
      if (choice?.finish_reason) finishReason = choice.finish_reason;
      const t = chunkToken(chunk, call.kind);
      if (t === undefined) continue;
      const plain = asIs(chunk, forwardable)
        ? forwardedData(chunk, data, withUsage, call.serviceTier)
        : undefined;
      if (plain !== undefined) shapes.learn(data, t, plain);
      token(plain === undefined ? t : { ...t, sse: frame(plain) });
    }
  };
  return new Promise((resolve, reject) => {
    let settled = false;
    // Once the first token is out, what comes next is read at the end of the loop's turn, so
    // that other streams' first tokens, read in the same turn, go out before it
    // (turn-writes.ts). Bytes are read in the order they came. Most turns bring a stream one
    // read, which waits alone, without an array.
    let held: Buffer | null = null;
    let more: Buffer[] | null = null;
    const fail = (e: Error) => {
      if (settled) return;
      if (e === PAST_CAP) return cutAtCap();
      settled = true;
      held = more = null;
      res.destroy();
      reject(
        call.signal.aborted
          ? call.signal.reason
          : new UpstreamError(`${name}: stream broke: ${e.message}`, undefined, tokens === 0),
      );
    };
    // It went past the output cap: the client has its answer, ended as `length`, and the
    // connection is closed, which stops the backend generating (vLLM aborts the request).
    const cutAtCap = () => {
      settled = true;
      held = more = null;
      res.destroy();
      resolve({
        finishReason: 'length',
        ...promptUsage(usage),
        completionTokens: tokens,
        ttftParts: ttftParts(timings),
        pastCap: true,
        ...chosen,
      });
    };
    const decoder = new StringDecoder('utf8');
    const read = (bytes: Buffer) => {
      if (settled) return;
      try {
        // One whole token frame, as vLLM writes each event: forwarded as the very bytes read
        // (less a usage the client did not ask for).
        const known = reader.idle ? shapes.readFrame(bytes) : undefined;
        if (known !== undefined) token(known);
        else take(reader.push(decoder.write(bytes)));
      } catch (e) {
        fail(e as Error);
      }
    };
    const readPending = () => {
      const first = held;
      const rest = more;
      held = more = null;
      if (first !== null) read(first);
      if (rest !== null) for (let i = 0; i < rest.length; i++) read(rest[i]);
    };
    res.on('data', (bytes: Buffer) => {
      if (held !== null) (more ??= []).push(bytes);
      else if (tokens === 0) read(bytes);
      else {
        held = bytes;
        TURN_WRITES.readLater(readPending);
      }
    });
    // The whole body is read, [DONE] included, so the keep-alive connection is reused.
    res.once('end', () => {
      readPending();
      if (settled) return;
      try {
        // A last event sent without its blank line still counts.
        take(reader.push(decoder.end()));
        take(reader.end());
        // A body that ends with neither a finish reason nor [DONE] was cut short, or was no
        // stream at all (an error, or an empty answer, sent with a 200).
        if (finishReason === undefined && !done) {
          const type = res.headers['content-type'] ?? 'no content-type';
          throw new Error(`the body (${type}) ended without a finish reason or [DONE]`);
        }
        settled = true;
        resolve({
          finishReason: finishReason ?? 'stop',
          ...promptUsage(usage),
          // What it says it generated, but never past the output cap asked of each choice.
          completionTokens: Math.min(counted(usage?.completion_tokens) ?? tokens, cap * choices),
          ttftParts: ttftParts(timings),
          ...chosen,
        });
      } catch (e) {
        fail(e as Error);
      }
    });
    // Tokens read before a break still go out, unless the call was given up.
    res.once('error', (e) => {
      if (!call.signal.aborted) readPending();
      fail(e);
    });
    res.once('close', () => {
      if (res.complete) return;
      if (!call.signal.aborted) readPending();
      fail(new Error('the connection closed before the body ended'));
    });
  });
}
