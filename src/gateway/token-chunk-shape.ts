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
 */
export class TokenChunkShape {
  private readonly prefix: string;
  private readonly suffix: string;
  /** The same as a whole SSE frame's bytes: `data: ` + prefix, and suffix + the blank line. */
  private readonly framePrefix: Buffer;
  private readonly frameSuffix: Buffer;

  private constructor(prefix: string, suffix: string) {
    this.prefix = prefix;
    this.suffix = suffix;
    this.framePrefix = Buffer.from(`data: ${prefix}`);
    this.frameSuffix = Buffer.from(`${suffix}\n\n`);
  }

  /**
   * The shape of `data`, a token chunk whose `field` (`content` or `text`) holds `token`;
   * undefined when the token is not written there the way JSON.stringify writes it, or the
   * field appears more than once.
   */
  static learn(
    data: string,
    field: 'content' | 'text',
    token: string,
  ): TokenChunkShape | undefined {
    const key = `"${field}":`;
    const value = JSON.stringify(token);
    const at = data.indexOf(key + value);
    if (at < 0 || data.indexOf(key) !== at || data.indexOf(key, at + 1) >= 0) return undefined;
    const open = at + key.length + 1; // after the opening quote
    return new TokenChunkShape(data.slice(0, open), data.slice(open + value.length - 2));
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
    return stringBody(bytes.toString('utf8', head.length, end));
  }
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
