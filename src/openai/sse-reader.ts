/**
 * Splits a Server-Sent Events text stream into the `data:` payloads of its events, as OpenAI
 * compatible servers send them (`data: {json}\n\n`, ending with `data: [DONE]`). Handles events
 * split across chunks, CRLF line ends and multi-line data; ignores comments and other fields.
 * Synchronous on purpose: the caller already iterates the body, and a generator per layer costs
 * a promise per token.
 */
/** The longest event a reader takes by default: past it, a stream is broken, not slow. */
export const MAX_EVENT_CHARS = 16 * 1024 * 1024;

export class SseReader {
  private buffer = '';
  /** Text after `buffer` with no line end yet, as it came. */
  private pending: string[] = [];
  private pendingChars = 0;
  private data: string[] = [];
  private dataChars = 0;
  private readonly maxChars: number;

  /** `maxChars`: the longest line or event taken; a longer one throws (the stream is broken). */
  constructor(maxChars = MAX_EVENT_CHARS) {
    this.maxChars = maxChars;
  }

  /** Nothing held: the last text pushed ended with an event's blank line. */
  get idle(): boolean {
    return this.buffer === '' && this.pendingChars === 0 && this.data.length === 0;
  }

  /** The payloads of the events `text` completes. */
  push(text: string): string[] {
    const out: string[] = [];
    // What is held has no line end: text without one is only kept, in pieces (joined, a long
    // line would be copied whole at each read), and only the new text is searched.
    const first = text.indexOf('\n');
    if (first < 0) {
      this.pending.push(text);
      this.pendingChars += text.length;
      if (this.buffer.length + this.pendingChars > this.maxChars) this.tooLong();
      return out;
    }
    if (this.pending.length > 0) {
      this.buffer += this.pending.join('');
      this.pending = [];
      this.pendingChars = 0;
    }
    const held = this.buffer.length;
    this.buffer = held === 0 ? text : this.buffer + text;
    let from = 0;
    for (let nl = held + first; nl >= 0; nl = this.buffer.indexOf('\n', from)) {
      const end = nl > from && this.buffer.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
      this.line(this.buffer.slice(from, end), out);
      from = nl + 1;
    }
    this.buffer = this.buffer.slice(from);
    if (this.buffer.length > this.maxChars) this.tooLong();
    return out;
  }

  /** The body ended: a last event without its blank line is still delivered. */
  end(): string[] {
    const out: string[] = [];
    if (this.pending.length > 0) this.buffer += this.pending.join('');
    this.pending = [];
    this.pendingChars = 0;
    if (this.buffer !== '') this.line(this.buffer, out);
    this.buffer = '';
    this.line('', out);
    return out;
  }

  private line(line: string, out: string[]): void {
    if (line === '') {
      if (this.data.length > 0)
        out.push(this.data.length === 1 ? this.data[0] : this.data.join('\n'));
      this.data = [];
      this.dataChars = 0;
    } else if (line.startsWith('data:')) {
      const data = line.slice(line.charCodeAt(5) === 32 ? 6 : 5);
      this.dataChars += data.length;
      if (this.dataChars > this.maxChars) this.tooLong();
      this.data.push(data);
    }
  }

  private tooLong(): never {
    throw new Error(`an event ran past ${this.maxChars} characters`);
  }
}
