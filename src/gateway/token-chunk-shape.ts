/**
 * The token chunks of one upstream stream differ only in their text: vLLM's
 * `{"id":"chatcmpl-…","object":"chat.completion.chunk","created":…,"model":"…","choices":[{"index":0,"delta":{"content":"` + text + `"},"logprobs":null,"finish_reason":null}]}`
 * repeats byte for byte around it. Learnt from the first token chunk the gateway parsed and
 * found fit to forward as is, the shape recognises the next ones by those bytes, so the
 * per-token path decodes one JSON string instead of a whole chunk.
 *
 * Exact, not a heuristic: a chunk is taken only when it is the learnt prefix, a JSON string's
 * body that JSON.parse accepts, and the learnt suffix. The string cannot end early or swallow
 * the suffix (an unescaped quote or a trailing lone backslash fails the parse), so the chunk
 * parses to the learnt one with only the text changed. Anything else — the finish, usage, a
 * changed id — goes to the full parse.
 *
 * What the client gets of such a chunk is the chunk as it came, or, learnt alongside, the same
 * chunk as the client is to get it (without the `"usage": null` the gateway asked for and the
 * client did not): its text's bytes between that chunk's own prefix and suffix.
 */
import { isUtf8 } from 'node:buffer';
import type { ReasoningField, TokenEvent } from './backend.ts';

export class TokenChunkShape {
  private readonly prefix: string;
  private readonly suffix: string;
  /** The same as a whole SSE frame's bytes: `data: ` + prefix, and suffix + the blank line. */
  private readonly framePrefix: Buffer;
  private readonly frameSuffix: Buffer;
  /** The client's chunk around the text; null: the chunk as it came. */
  private readonly out: { readonly prefix: Buffer; readonly suffix: Buffer } | null;

  private constructor(at: Around, out: Around | null) {
    this.prefix = at.prefix;
    this.suffix = at.suffix;
    this.framePrefix = Buffer.from(`data: ${at.prefix}`);
    this.frameSuffix = Buffer.from(`${at.suffix}\n\n`);
    this.out =
      out === null
        ? null
        : { prefix: Buffer.from(`data: ${out.prefix}`), suffix: Buffer.from(`${out.suffix}\n\n`) };
  }

  /**
   * The shape of `data`, a token chunk whose `field` (`content`, `text`, `reasoning`…) holds
   * `token`, and of `forwarded`, the same chunk as the client is to get it; undefined when the
   * token is not written there the way JSON.stringify writes it, or the field appears more than
   * once.
   */
  static learn(
    data: string,
    field: string,
    token: string,
    forwarded = data,
  ): TokenChunkShape | undefined {
    const at = around(data, field, token);
    const out = forwarded === data ? null : around(forwarded, field, token);
    if (at === undefined || out === undefined) return undefined;
    return new TokenChunkShape(at, out);
  }

  /** The token text when the event's `data` has this shape, else undefined. */
  text(data: string): string | undefined {
    const { prefix, suffix } = this;
    if (
      data.length < prefix.length + suffix.length ||
      !data.startsWith(prefix) ||
      !data.endsWith(suffix)
    ) {
      return undefined;
    }
    return stringBody(data.slice(prefix.length, data.length - suffix.length));
  }

  /**
   * The token text when `bytes` are exactly one SSE frame of this shape (`data: …\n\n`, as
   * vLLM writes each event), else undefined: read without decoding the rest of the frame.
   */
  frameText(bytes: Buffer): string | undefined {
    const { framePrefix: head, frameSuffix: tail } = this;
    const end = bytes.length - tail.length;
    if (end < head.length || !bytesAt(bytes, head, 0) || !bytesAt(bytes, tail, end)) {
      return undefined;
    }
    // Bytes that are not UTF-8 are read whole, and their client gets them replaced (U+FFFD).
    if (!isUtf8(bytes)) return undefined;
    return stringBody(bytes.toString('utf8', head.length, end));
  }

  /** The client's SSE frame for `data`, a chunk `text` found of this shape. */
  forward(data: string): Uint8Array {
    const out = this.out;
    if (out === null) return Buffer.from(`data: ${data}\n\n`);
    const body = Buffer.from(data.slice(this.prefix.length, data.length - this.suffix.length));
    return Buffer.concat([out.prefix, body, out.suffix]);
  }

  /** The client's SSE frame for `bytes`, a frame `frameText` found of this shape. */
  forwardFrame(bytes: Buffer): Uint8Array {
    const out = this.out;
    if (out === null) return bytes;
    const body = bytes.subarray(this.framePrefix.length, bytes.length - this.frameSuffix.length);
    return Buffer.concat([out.prefix, body, out.suffix]);
  }
}

/**
 * A stream's learnt token shapes: its reply tokens' and, for a reasoning model, its thinking
 * tokens' (another field, so another shape). Each is learnt from the first chunk of its kind fit
 * to forward as is, and reads the next ones by their bytes.
 */
export class TokenShapes {
  private readonly replyField: 'content' | 'text';
  private reply: TokenChunkShape | undefined;
  private thought: { readonly shape: TokenChunkShape; readonly field: ReasoningField } | undefined;

  constructor(replyField: 'content' | 'text') {
    this.replyField = replyField;
  }

  /** The token in `data` when it has a learnt shape, with the frame the client is to get. */
  read(data: string): TokenEvent | undefined {
    const reply = this.reply?.text(data);
    if (reply !== undefined)
      return { text: reply, sse: (this.reply as TokenChunkShape).forward(data) };
    const t = this.thought;
    const thinking = t?.shape.text(data);
    if (t === undefined || thinking === undefined) return undefined;
    return { text: '', sse: t.shape.forward(data), reasoning: { field: t.field, text: thinking } };
  }

  /** The same for `bytes` that are exactly one SSE frame, read without decoding the rest. */
  readFrame(bytes: Buffer): TokenEvent | undefined {
    const reply = this.reply?.frameText(bytes);
    if (reply !== undefined) {
      return { text: reply, sse: (this.reply as TokenChunkShape).forwardFrame(bytes) };
    }
    const t = this.thought;
    const thinking = t?.shape.frameText(bytes);
    if (t === undefined || thinking === undefined) return undefined;
    const reasoning = { field: t.field, text: thinking };
    return { text: '', sse: t.shape.forwardFrame(bytes), reasoning };
  }

  /** Learns from `data`, a chunk parsed whole to `t` and fit to go to the client as `forwarded`. */
  learn(data: string, t: TokenEvent, forwarded: string): void {
    // A tool call's piece, or a token with its log probabilities, is read whole, each time: a
    // shape would read the next without them.
    if (t.toolCalls !== undefined || t.logprobs !== undefined) return;
    const r = t.reasoning;
    if (r === undefined) {
      this.reply ??= TokenChunkShape.learn(data, this.replyField, t.text, forwarded);
    } else if (t.text === '' && this.thought === undefined) {
      const shape = TokenChunkShape.learn(data, r.field, r.text, forwarded);
      if (shape !== undefined) this.thought = { shape, field: r.field };
    }
  }
}

/** A chunk's text before and after its token's JSON string body. */
interface Around {
  readonly prefix: string;
  readonly suffix: string;
}

function around(data: string, field: string, token: string): Around | undefined {
  const key = `"${field}":`;
  const value = JSON.stringify(token);
  const at = data.indexOf(key + value);
  if (at < 0 || data.indexOf(key) !== at || data.indexOf(key, at + 1) >= 0) return undefined;
  const open = at + key.length + 1; // after the opening quote
  return { prefix: data.slice(0, open), suffix: data.slice(open + value.length - 2) };
}

/** Whether `bytes` hold `part` from `at` (a loop: `Buffer.compare` with ranges allocates). */
function bytesAt(bytes: Buffer, part: Buffer, at: number): boolean {
  for (let i = 0; i < part.length; i++) if (bytes[at + i] !== part[i]) return false;
  return true;
}

/** `body` as the inside of a JSON string, decoded; undefined when it is not one. */
function stringBody(body: string): string | undefined {
  if (isPlain(body)) return body;
  try {
    const text: unknown = JSON.parse(`"${body}"`);
    return typeof text === 'string' ? text : undefined;
  } catch {
    return undefined;
  }
}

/** No quote, backslash or control character: a JSON string body that is its own text. */
function isPlain(body: string): boolean {
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}
