// A vLLM server as a test needs one: its model list, an idle /metrics, and one scripted stream
// for every chat or text completion, over real HTTP.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MODEL, onTeardown } from './gateway-kit.ts';

/**
 * A vLLM that tokenizes a word a token (`/tokenize`), and streams `deltas` for every chat (two
 * JSON tokens unless told; a delta's `logprobs`, if any, goes beside it in its choice), then ends
 * as `finish` says; its chunks named as the gateway names the request (`chatcmpl-` and its
 * X-Request-Id) or, `foreign`, not; `bodies`: the request bodies it was sent. A text completion
 * streams the same, each delta's `content` as its chunk's `text`. `promptTokens`: what its
 * usage counts of a request's prompt (9, unless told). `/tokenize` of the prompt `die` drops
 * the connection, of `slow` answers after 2 s. `stop` closes it, connections and all.
 */
export async function fakeVllm(
  deltas: readonly object[] = [{ content: '{"a":' }, { content: ' 1}' }],
  foreign = false,
  finish = 'stop',
  promptTokens: (body: Record<string, unknown>) => number = () => 9,
): Promise<{
  readonly url: string;
  readonly bodies: unknown[];
  readonly stop: () => Promise<void>;
}> {
  const bodies: unknown[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (b: Buffer) => parts.push(b));
    req.on('end', () => {
      if (req.url === '/metrics') {
        res.end('vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n');
      } else if (req.url === '/v1/models') {
        res.end(JSON.stringify({ data: [{ id: MODEL, object: 'model', parent: null }] }));
      } else if (req.url === '/tokenize') {
        // A token per word, as a vLLM answers; a prompt of no words is its 400.
        const asked = JSON.parse(Buffer.concat(parts).toString()) as { prompt: string };
        bodies.push(asked);
        // A server that dies under the request: no answer at all.
        if (asked.prompt === 'die') return void req.socket.destroy();
        if (asked.prompt === 'slow') {
          return void setTimeout(() => res.end('{"count":1,"tokens":[1]}'), 2_000).unref();
        }
        const words = asked.prompt.split(' ').filter((w) => w !== '');
        res.writeHead(words.length === 0 ? 400 : 200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify(
            words.length === 0
              ? { object: 'error', message: 'empty prompt', code: 400 }
              : { count: words.length, max_model_len: 8192, tokens: words.map((_, i) => i + 1) },
          ),
        );
      } else {
        const body = JSON.parse(Buffer.concat(parts).toString()) as { model: string };
        bodies.push(body);
        const prompt = promptTokens(body);
        const text = req.url === '/v1/completions';
        const prefix = text ? 'cmpl' : 'chatcmpl';
        const id = foreign ? `${prefix}-upstream-own` : `${prefix}-${req.headers['x-request-id']}`;
        const object = text ? 'text_completion' : 'chat.completion.chunk';
        const event = (fields: object) =>
          `data: ${JSON.stringify({ id, object, model: body.model, ...fields })}\n\n`;
        const choice = (delta: { content?: string }, more: object) =>
          text ? { index: 0, text: delta.content ?? '', ...more } : { index: 0, delta, ...more };
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(
          deltas
            .map(({ logprobs, ...delta }: { logprobs?: unknown }) =>
              event({ choices: [choice(delta, logprobs ? { logprobs } : {})] }),
            )
            .join('') +
            event({ choices: [choice({}, { finish_reason: finish })] }) +
            event({
              choices: [],
              usage: {
                prompt_tokens: prompt,
                completion_tokens: deltas.length,
                total_tokens: prompt + deltas.length,
              },
            }) +
            'data: [DONE]\n\n',
        );
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const stop = () =>
    new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections();
    });
  onTeardown(() => (server.listening ? stop() : Promise.resolve()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies, stop };
}
