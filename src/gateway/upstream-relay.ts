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
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import type { Ms } from '../core/request/units.ts';

/** Thrown by a token past the output cap: the stream ends there, as `length`. */
const PAST_CAP = new Error('a token past the output cap');
/** Thrown at `[DONE]`: the stream has ended, whatever its body goes on to send. */
const AT_DONE = new Error('[DONE]');

/**
 * How long a stream may go without an event (a token, its usage, its end): SSE comments, which
 * a server may send to keep a connection open, are not progress.
 */
export interface StallWatch {
  readonly clock: Clock;
  readonly timers: Timers;
  readonly afterMs: Ms;
}

/** Reads `res`, the 2xx answer of backend `name` to `call`, into `onToken` and the end. */
export function relayStream(
  name: string,
  res: IncomingMessage,
  call: UpstreamCall,
  onToken: TokenSink,
  stall?: StallWatch,
): Promise<StreamEnd> {
  const forwardable = {
    id: answerId(call.kind, call.id),
    model: call.body.model,
  };
  const reader = new SseReader();
  let tokens = 0;
  /** Events before [DONE]: a stream of none is no answer, whatever its status said. */
  let chunks = 0;
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
  let lastEventMs = stall?.clock.now() ?? 0;
  const take = (events: string[]) => {
    if (events.length > 0 && stall !== undefined) lastEventMs = stall.clock.now();
    for (const data of events) {
      if (data === '[DONE]') {
        done = true;
        throw AT_DONE;
      }
      chunks++;
      const known = shapes.read(data);
      if (known !== undefined) {
        token(known);
        continue;
      }
      const chunk = JSON.parse(data) as UpstreamChunk;
      if (isErrorEvent(chunk)) throw errorEvent(name, chunk, data, tokens === 0);
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
    let watch: TimerHandle | undefined;
    const fail = (e: Error): void => {
      if (settled) return;
      if (e === PAST_CAP) return cutAtCap();
      if (e === AT_DONE) return ended();
      settled = true;
      watch?.cancel();
      held = more = null;
      res.destroy();
      reject(
        call.signal.aborted
          ? call.signal.reason
          : e instanceof UpstreamError
            ? e
            : new UpstreamError(`${name}: stream broke: ${e.message}`, undefined, tokens === 0),
      );
    };
    // It went past the output cap: the client has its answer, ended as `length`, and the
    // connection is closed, which stops the backend generating (vLLM aborts the request).
    const cutAtCap = () => {
      settled = true;
      watch?.cancel();
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
        if (known !== undefined) {
          if (stall !== undefined) lastEventMs = stall.clock.now();
          token(known);
        } else take(reader.push(decoder.write(bytes)));
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
    // The stream's end: at [DONE], or when a body without one ends. What the body sends after
    // [DONE] is not read as the stream's; the body is still read to its end, so the keep-alive
    // connection is reused.
    const ended = (): void => {
      // A body that ends with neither a finish reason nor [DONE] was cut short, or was no
      // stream at all (an error, or an empty answer, sent with a 200).
      if (finishReason === undefined && !done) {
        const type = res.headers['content-type'] ?? 'no content-type';
        return fail(new Error(`the body (${type}) ended without a finish reason or [DONE]`));
      }
      // vLLM's every stream has a chunk (the role, the finish) before [DONE].
      if (chunks === 0) return fail(new Error('the stream was [DONE] alone: no chunk, no answer'));
      settled = true;
      watch?.cancel();
      held = more = null;
      resolve({
        finishReason: finishReason ?? 'stop',
        ...promptUsage(usage),
        // What it says it generated, but never past the output cap asked of each choice.
        completionTokens: Math.min(counted(usage?.completion_tokens) ?? tokens, cap * choices),
        ttftParts: ttftParts(timings),
        ...chosen,
      });
    };
    res.once('end', () => {
      readPending();
      if (settled) return;
      try {
        // A last event sent without its blank line still counts.
        take(reader.push(decoder.end()));
        take(reader.end());
        ended();
      } catch (e) {
        fail(e as Error);
      }
    });
    if (stall !== undefined) {
      const { clock, timers, afterMs } = stall;
      const check = () => {
        if (settled) return;
        if (clock.now() - lastEventMs < afterMs) watch = timers.at(lastEventMs + afterMs, check);
        else fail(new Error(`no event for ${afterMs} ms`));
      };
      watch = timers.at(lastEventMs + afterMs, check);
    }
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

/**
 * An error the backend told in the stream, with the status it gives (vLLM's `code`: 400 for a
 * request it refuses — too long, a bad argument — 500 for its own failure): a request at fault
 * is the client's to mend, not a backend failing, so it is neither retried elsewhere nor held
 * against the backend's breaker. Without a status, the stream broke.
 */
function errorEvent(name: string, chunk: UpstreamChunk, data: string, before: boolean) {
  const told = (typeof chunk.error === 'object' && chunk.error !== null ? chunk.error : chunk) as {
    readonly code?: unknown;
  };
  const code = told.code;
  const status = Number.isInteger(code) && (code as number) >= 400 && (code as number) < 600;
  const message = `${name}: it sent an error event: ${data.slice(0, 200)}`;
  return new UpstreamError(message, status ? (code as number) : undefined, before, data);
}
