/**
 * An OpenAI-compatible HTTP upstream (vLLM, SGLang, TGI, llama.cpp server…) over Node's
 * keep-alive fetch. Every call streams (with usage) whatever the client asked for. Its
 * Prometheus metrics are scraped on an interval; figures older than `staleAfterMs` — or a
 * failed scrape — make the backend not ready: unknown is never read as idle.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import type { Ms } from '../core/request/units.ts';
import { loadFromExposition } from './backend-metrics.ts';
import {
  UpstreamError,
  type Backend,
  type BackendLoad,
  type UpstreamCall,
  type UpstreamEvent,
} from './backend.ts';
import { sseData } from './sse-reader.ts';

export interface HttpBackendOptions {
  readonly name: string;
  /** Base URL, e.g. http://10.0.0.5:8000 (the `/v1/...` paths are appended). */
  readonly url: string;
  readonly apiKey?: string;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly scrapeIntervalMs?: Ms;
  readonly staleAfterMs?: Ms;
}

const UNKNOWN = (atMs: Ms): BackendLoad => ({
  ready: false,
  running: 0,
  waiting: 0,
  kvUsage: 1,
  atMs,
});

export class HttpBackend implements Backend {
  readonly name: string;
  private readonly opts: HttpBackendOptions;
  private last: BackendLoad;
  private timer: TimerHandle | null = null;
  private closed = false;

  constructor(opts: HttpBackendOptions) {
    this.name = opts.name;
    this.opts = opts;
    this.last = UNKNOWN(opts.clock.now());
    this.scheduleScrape(0);
  }

  load(): BackendLoad {
    const stale = this.opts.clock.now() - this.last.atMs > (this.opts.staleAfterMs ?? 5_000);
    return stale ? { ...this.last, ready: false } : this.last;
  }

  async *stream(call: UpstreamCall): AsyncGenerator<UpstreamEvent> {
    const path = call.kind === 'chat' ? '/v1/chat/completions' : '/v1/completions';
    const body = { ...call.body, stream: true, stream_options: { include_usage: true } };
    let res: Response;
    try {
      res = await fetch(this.opts.url + path, {
        method: 'POST',
        headers: this.headers({ 'content-type': 'application/json' }),
        body: JSON.stringify(body),
        signal: call.signal,
      });
    } catch (e) {
      if (call.signal.aborted) throw e;
      throw new UpstreamError(`${this.name}: ${(e as Error).message}`, undefined, true);
    }
    if (!res.ok || res.body === null) {
      const text = await res.text().catch(() => '');
      throw new UpstreamError(
        `${this.name}: HTTP ${res.status} ${text.slice(0, 200)}`,
        res.status,
        true,
      );
    }
    let tokens = 0;
    let finishReason = 'stop';
    let usage: { prompt_tokens?: number; completion_tokens?: number } | undefined;
    try {
      for await (const data of sseData(res.body)) {
        if (data === '[DONE]') break;
        const chunk = JSON.parse(data) as {
          choices?: Array<{
            delta?: { content?: string };
            text?: string;
            finish_reason?: string | null;
          }>;
          usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
        };
        const choice = chunk.choices?.[0];
        const text = call.kind === 'chat' ? choice?.delta?.content : choice?.text;
        if (text !== undefined && text !== '') {
          tokens++;
          yield { type: 'token', text };
        }
        if (choice?.finish_reason) finishReason = choice.finish_reason;
        if (chunk.usage) usage = chunk.usage;
      }
    } catch (e) {
      if (call.signal.aborted) throw e;
      throw new UpstreamError(
        `${this.name}: stream broke: ${(e as Error).message}`,
        undefined,
        tokens === 0,
      );
    }
    yield {
      type: 'end',
      finishReason,
      promptTokens: usage?.prompt_tokens ?? 0,
      completionTokens: usage?.completion_tokens ?? tokens,
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
  }

  private headers(extra: Record<string, string>): Record<string, string> {
    return this.opts.apiKey === undefined
      ? extra
      : { ...extra, authorization: `Bearer ${this.opts.apiKey}` };
  }

  private scheduleScrape(afterMs: Ms): void {
    if (this.closed) return;
    this.timer = this.opts.timers.at(this.opts.clock.now() + afterMs, () => void this.scrape());
  }

  private async scrape(): Promise<void> {
    try {
      const res = await fetch(`${this.opts.url}/metrics`, { headers: this.headers({}) });
      const text = await res.text();
      const load = res.ok ? loadFromExposition(text, this.opts.clock.now()) : undefined;
      // A scrape that fails leaves the last figures to go stale rather than pretending idle.
      if (load !== undefined) this.last = load;
    } catch {
      // Unreachable: same — the figures age out and the backend stops being ready.
    }
    this.scheduleScrape(this.opts.scrapeIntervalMs ?? 1_000);
  }
}
