// A closed-loop streaming load generator for the gateway overhead benchmark: `concurrency`
// slots, each sending chat completions one after another, their first requests spread over
// one request lifetime so arrivals are steady rather than one burst. Built on node:http with
// a keep-alive agent and a byte scan for content chunks, so the generator itself stays cheap
// next to the servers it measures. Records client-side TTFT and the gap between token chunks.
import { Agent, request } from 'node:http';
import { contentChunks } from './stream-client.ts';

export interface LoadSample {
  readonly ttft: number[];
  readonly gaps: number[];
  /** Failures by what they were: `HTTP 503 gateway_overloaded`, `cut mid-stream`, `request error: …`. */
  readonly failed: Map<string, number>;
}

function failed(s: LoadSample, why: string): void {
  s.failed.set(why, (s.failed.get(why) ?? 0) + 1);
}

export interface LoadOptions {
  readonly url: string;
  readonly concurrency: number;
  readonly requestsPerSlot: number;
  readonly maxTokens: number;
  /** First requests start evenly over this many ms. */
  readonly rampMs: number;
}

function once(agent: Agent, o: LoadOptions, s: LoadSample): Promise<void> {
  const body = JSON.stringify({
    model: 'llama-3-8b',
    messages: [{ role: 'user', content: 'measure me' }],
    max_tokens: o.maxTokens,
    ignore_eos: true,
    stream: true,
  });
  const t0 = performance.now();
  return new Promise((done) => {
    const req = request(
      `${o.url}/v1/chat/completions`,
      { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
      (res) => {
        if (res.statusCode !== 200) {
          failed(s, `HTTP ${res.statusCode} ${res.headers['x-goodput-reason'] ?? ''}`.trim());
          res.resume();
          res.on('end', done);
          return;
        }
        let last = -1;
        res.on('data', (chunk: Buffer) => {
          if (contentChunks(chunk) === 0) return;
          const now = performance.now();
          if (last < 0) s.ttft.push(now - t0);
          else s.gaps.push(now - last);
          last = now;
        });
        res.on('end', done);
        res.on('error', () => {
          failed(s, 'cut mid-stream');
          done();
        });
      },
    );
    req.on('error', (e) => {
      failed(s, `request error: ${e.message}`);
      done();
    });
    req.end(body);
  });
}

export async function streamLoad(o: LoadOptions): Promise<LoadSample> {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const s: LoadSample = { ttft: [], gaps: [], failed: new Map() };
  await Promise.all(
    Array.from({ length: o.concurrency }, async (_, slot) => {
      await new Promise((r) => setTimeout(r, (slot * o.rampMs) / o.concurrency));
      for (let i = 0; i < o.requestsPerSlot; i++) await once(agent, o, s);
    }),
  );
  agent.destroy();
  return s;
}
