/**
 * Reads a Server-Sent Events byte stream into the `data:` payloads of its events, as OpenAI
 * compatible servers send them (`data: {json}\n\n`, ending with `data: [DONE]`). Handles events
 * split across chunks, CRLF line ends and multi-line data; ignores comments and other fields.
 */
export async function* sseData(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, '');
      buffer = buffer.slice(nl + 1);
      if (line === '') {
        if (data.length > 0) yield data.join('\n');
        data = [];
      } else if (line.startsWith('data:')) {
        data.push(line.slice(line.charAt(5) === ' ' ? 6 : 5));
      }
    }
  }
  buffer += decoder.decode();
  if (buffer.startsWith('data:')) data.push(buffer.slice(buffer.charAt(5) === ' ' ? 6 : 5));
  if (data.length > 0) yield data.join('\n');
}
