/**
 * Splits a Server-Sent Events text stream into the `data:` payloads of its events, as OpenAI
 * compatible servers send them (`data: {json}\n\n`, ending with `data: [DONE]`). Handles events
 * split across chunks, CRLF line ends and multi-line data; ignores comments and other fields.
 * Synchronous on purpose: the caller already iterates the body, and a generator per layer costs
 * a promise per token.
 */
export class SseReader {
  private buffer = '';
  private data: string[] = [];

  /** Nothing held: the last text pushed ended with an event's blank line. */
  get idle(): boolean {
    return this.buffer === '' && this.data.length === 0;
  }

  /** The payloads of the events `text` completes. */
  push(text: string): string[] {
    const out: string[] = [];
    this.buffer = this.buffer === '' ? text : this.buffer + text;
    let from = 0;
    for (let nl = this.buffer.indexOf('\n'); nl >= 0; nl = this.buffer.indexOf('\n', from)) {
      const end = nl > from && this.buffer.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
      this.line(this.buffer.slice(from, end), out);
      from = nl + 1;
    }
    this.buffer = this.buffer.slice(from);
    return out;
  }

  /** The body ended: a last event without its blank line is still delivered. */
  end(): string[] {
    const out: string[] = [];
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
    } else if (line.startsWith('data:')) {
      this.data.push(line.slice(line.charCodeAt(5) === 32 ? 6 : 5));
    }
  }
}
