// An open-loop streaming client for live overload runs: every request is sent at its own
// scheduled time (all at once for a burst), whatever happened to the others, and its fate is
// recorded as the client saw it — status, time to first token from the scheduled send, gaps
// between token chunks, whether the stream ended with [DONE] and no error event. Built on
// node:http with an unbounded keep-alive agent and a byte scan for chunks, so the generator
// stays cheap next to the gateway it measures.
import { Agent, request } from 'node:http';
import { percentileSorted } from '../src/core/stats/percentile.ts';

export interface Outcome {
  /** HTTP status; 0 when the connection failed. */
  readonly status: number;
  /** From the scheduled send to the first token chunk; null without one. */
  readonly ttftMs: number | null;
  /** The 99th percentile (numpy-linear) of the gaps between token chunks, ms; 0 without any. */
  readonly gapP99Ms: number;
  /** Token chunks received (`"content":"` with a non-empty string). */
  readonly tokens: number;
  /** A 200 whose stream ended with [DONE] and carried no error event. */
  readonly completed: boolean;
  /** The answer's x-goodput-request-id, to find its decision record. */
  readonly requestId: string | null;
  /** From the scheduled send to the end of the answer. */
  readonly latencyMs: number;
  /** Sent on a connection already open (not one this request had to wait to open). */
  readonly reused: boolean;
  /** For refusals: the error code and Retry-After (s) the gateway gave. */
  readonly code: string | null;
  readonly retryAfterS: number | null;
}

const CONTENT = Buffer.from('"content":"');
const DONE = Buffer.from('data: [DONE]');
const ERROR = Buffer.from('"error"');

/** Token chunks in a piece of an SSE body: `"content":"` followed by a non-empty string. */
export function contentChunks(buf: Buffer): number {
  let n = 0;
  for (let i = buf.indexOf(CONTENT); i >= 0; i = buf.indexOf(CONTENT, i + CONTENT.length)) {
    if (buf[i + CONTENT.length] !== 0x22) n++;
  }
  return n;
}

export interface StreamRequest {
  readonly url: string;
  readonly body: string;
  readonly headers?: Record<string, string>;
}

function send(agent: Agent, r: StreamRequest, t0: number): Promise<Outcome> {
  return new Promise((done) => {
    const req = request(
      `${r.url}/v1/chat/completions`,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', ...r.headers },
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const requestId = (res.headers['x-goodput-request-id'] as string | undefined) ?? null;
        const retry = res.headers['retry-after'];
        let ttftMs: number | null = null;
        let last = -1;
        const gapsMs: number[] = [];
        let tokens = 0;
        let tail = Buffer.alloc(0);
        let sawDone = false;
        let sawError = false;
        const body: Buffer[] = [];
        res.on('data', (chunk: Buffer) => {
          if (status !== 200) {
            body.push(chunk);
            return;
          }
          const scan = Buffer.concat([tail, chunk]);
          if (scan.includes(DONE)) sawDone = true;
          if (scan.includes(ERROR)) sawError = true;
          tail = scan.subarray(Math.max(0, scan.length - 16));
          const k = contentChunks(chunk);
          if (k === 0) return;
          tokens += k;
          const now = performance.now();
          if (ttftMs === null) ttftMs = now - t0;
          else gapsMs.push(now - last);
          last = now;
        });
        const finish = () => {
          let code: string | null = null;
          if (status !== 200) {
            try {
              code =
                (JSON.parse(Buffer.concat(body).toString()) as { error?: { code?: string } }).error
                  ?.code ?? null;
            } catch {
              code = null;
            }
          }
          done({
            status,
            ttftMs,
            gapP99Ms: gapP99(gapsMs),
            tokens,
            completed: status === 200 && sawDone && !sawError,
            requestId,
            latencyMs: performance.now() - t0,
            reused: req.reusedSocket,
            code,
            retryAfterS: retry === undefined ? null : Number(retry),
          });
        };
        res.on('end', finish);
        res.on('error', finish);
      },
    );
    req.on('error', () =>
      done({
        status: 0,
        ttftMs: null,
        gapP99Ms: 0,
        tokens: 0,
        completed: false,
        requestId: null,
        latencyMs: performance.now() - t0,
        reused: req.reusedSocket,
        code: null,
        retryAfterS: null,
      }),
    );
    req.end(r.body);
  });
}

/**
 * `n` keep-alive connections to `url`, opened now (a GET of /readyz each), and an agent that
 * sends on a free one of them first: requests sent on it later measure the gateway, not a
 * connect that a flood of other clients holds up in the kernel or Node's accept. When none is
 * free (all streaming, or closed by the server) it opens a new connection at once rather than
 * queueing the request behind the others — a wait of the client's own that would count in its
 * time to first token. `Outcome.reused` tells the two apart.
 */
export async function warmAgent(url: string, n: number): Promise<Agent> {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: n });
  await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<void>((ok, fail) => {
          const req = request(`${url}/readyz`, { agent }, (res) => {
            res.resume();
            res.on('end', ok);
          });
          req.on('error', fail);
          req.end();
        }),
    ),
  );
  return agent;
}

/**
 * Sends `r` once at each of `atMs` (ms from now; all 0 for a burst) and resolves with every
 * outcome, in the order of `atMs`; on `agent`, or on new connections as needed.
 */
export async function openLoop(
  r: StreamRequest,
  atMs: readonly number[],
  agent = new Agent({ keepAlive: true, maxSockets: Infinity }),
): Promise<Outcome[]> {
  const start = performance.now();
  const outcomes = await Promise.all(
    atMs.map(async (at) => {
      const wait = start + at - performance.now();
      if (wait > 1) await new Promise((ok) => setTimeout(ok, wait));
      return send(agent, r, start + at);
    }),
  );
  agent.destroy();
  return outcomes;
}

/** The 99th percentile of a stream's gaps (numpy-linear), 0 without any. */
export function gapP99(gaps: readonly number[]): number {
  return gaps.length === 0
    ? 0
    : percentileSorted(
        [...gaps].sort((a, b) => a - b),
        99,
      );
}
