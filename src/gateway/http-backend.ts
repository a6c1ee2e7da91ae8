/**
 * An OpenAI-compatible HTTP upstream (vLLM, SGLang, TGI, llama.cpp server…) over a keep-alive
 * node:http (or, for an https URL, node:https) agent — several times cheaper per streamed chunk
 * than fetch, which matters at
 * thousands of tokens a second. Every call streams (with usage) whatever the client asked for,
 * and carries the gateway's request id as `X-Request-Id` (vLLM names its request after it) and
 * the attempt's W3C trace context (`traceparent`, `tracestate`) when it has one; its answer is
 * read by `upstream-relay.ts`. A staged prompt's leading pieces go first, one request each, not
 * streamed (`staged-pieces.ts`).
 * Its Prometheus metrics are scraped on an interval; figures older than `staleAfterMs` make
 * the backend not ready — at once when a scrape finds nothing listening: unknown is never
 * read as idle.
 */
import type { IncomingHttpHeaders, IncomingMessage, RequestOptions } from 'node:http';
import { LoraResidency } from './lora-residency.ts';
import { upstreamClient, type UpstreamClient } from './upstream-client.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import type { Ms } from '../core/request/units.ts';
import { parseRetryAfter } from '../core/resilience/retry-after.ts';
import {
  adaptersListed,
  loadFromExposition,
  modelListing,
  unscrapedLoad,
  type ModelListing,
} from './backend-metrics.ts';
import {
  UpstreamError,
  type Backend,
  type BackendLoad,
  type StreamEnd,
  type StagedCall,
  type TokenSink,
  type UpstreamCall,
} from './backend.ts';
import { pieceBodies } from './staged-pieces.ts';
import { readText } from './bounded-body.ts';
import { relayStream } from './upstream-relay.ts';
import { continuousUsage } from '../openai/request-fields.ts';

export interface HttpBackendOptions {
  readonly name: string;
  /** Base URL, e.g. http://10.0.0.5:8000 (the `/v1/...` paths are appended). */
  readonly url: string;
  readonly apiKey?: string;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly scrapeIntervalMs?: Ms;
  readonly staleAfterMs?: Ms;
  /** How long a call may go without a byte from the backend (default UPSTREAM_IDLE_MS). */
  readonly upstreamIdleMs?: Ms;
}

/**
 * A call that gets no byte from its backend for this long has failed, and the backend with it
 * (its breaker is told): a backend that accepts a request and never answers, or stalls
 * mid-stream, would otherwise hold a request without a client deadline for as long as its client
 * waits. Generous: flow control dispatches only what a replica can start, so even a 128K-token
 * prefill sends its first byte within seconds.
 */
export const UPSTREAM_IDLE_MS: Ms = 120_000;

/** A scrape that has not answered by then failed: the figures go on ageing. */
const SCRAPE_TIMEOUT_MS = 2_000;
/**
 * Every this many scrapes (the first included), `/v1/models` is read again beside `/metrics`:
 * adapters can be loaded and unloaded at run time (vLLM's `/v1/load_lora_adapter`).
 */
const MODELS_EVERY_SCRAPES = 10;

/** How much of an upstream's error answer is kept (and passed on, for a 4xx). */
const ERROR_BODY_CHARS = 4_096;

/** The most of a scrape's body read (vLLM's /metrics is tens of KiB): past it, the scrape fails. */
const SCRAPE_BODY_BYTES = 16 * 1024 * 1024;
/** The most of an error answer's body read: its first ERROR_BODY_CHARS are all that are kept. */
const ERROR_BODY_BYTES = 64 * 1024;

export class HttpBackend implements Backend {
  readonly name: string;
  readonly server: { readonly address: string; readonly port: number };
  private readonly opts: HttpBackendOptions;
  private last: BackendLoad;
  /** Why the last scrape failed; undefined after one succeeded. */
  private lastError: string | undefined = 'never scraped';
  /** Its last scrape found nothing listening: not ready now, not once its figures age out. */
  private refused = false;
  private timer: TimerHandle | null = null;
  private closed = false;
  /** Scrapes so far: every MODELS_EVERY_SCRAPES-th also reads the adapters served. */
  private scrapes = 0;
  /**
   * The next scrape reads `/v1/models` too, whatever the count: the backend answered 404 for a
   * model, perhaps an adapter unloaded since it was last listed.
   */
  private modelsStale = false;
  /** This gateway's requests open at the backend now, a seat a choice, staged pieces included. */
  private open = 0;
  /** The adapters `/v1/models` last listed; undefined until it has answered with a list. */
  private servable: readonly string[] | undefined;
  /** What `/v1/models` last listed; undefined until it has answered with a list. */
  private listed: ModelListing | undefined;
  /** The adapters its slots hold, as far as its gauges have told. */
  private readonly residency = new LoraResidency();
  private readonly client: UpstreamClient;

  constructor(opts: HttpBackendOptions) {
    this.name = opts.name;
    this.opts = opts;
    this.client = upstreamClient(opts.url, { keepAlive: true, maxSockets: Infinity });
    const url = new URL(opts.url);
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    // An IPv6 address without the brackets a URL writes it in.
    this.server = { address: url.hostname.replace(/^\[(.*)\]$/, '$1'), port };
    this.last = unscrapedLoad(opts.clock.now());
    this.scheduleScrape(0);
  }

  load(): BackendLoad {
    if (this.refused) return { ...this.last, ready: false, why: `${this.lastError}` };
    const age = this.opts.clock.now() - this.last.atMs;
    if (age <= (this.opts.staleAfterMs ?? 5_000)) return this.last;
    const why = `no fresh metrics from ${this.opts.url}/metrics for ${Math.round(age)} ms (${this.lastError ?? 'the last scrape succeeded; none has since'})`;
    return { ...this.last, ready: false, why };
  }

  async stream(call: UpstreamCall, onToken: TokenSink): Promise<StreamEnd> {
    // vLLM runs (and counts) each of a request's `n` choices as a request of its own.
    const n = call.body.n;
    const seats = typeof n === 'number' && Number.isInteger(n) && n > 1 ? n : 1;
    this.open += seats;
    try {
      return await this.streamed(call, onToken);
    } finally {
      this.open -= seats;
    }
  }

  private async streamed(call: UpstreamCall, onToken: TokenSink): Promise<StreamEnd> {
    const path = call.kind === 'chat' ? '/v1/chat/completions' : '/v1/completions';
    if (call.staged !== undefined) await this.stagePieces(path, call, call.staged);
    // The body was validated (bounded depth, known fields): serialising it cannot fail, and it
    // happens outside the try below, which blames the upstream for what goes wrong.
    // The usage the gateway counts by, and on every chunk too where the client asked for it.
    const text = JSON.stringify({
      ...call.body,
      stream: true,
      stream_options: continuousUsage(call.body)
        ? { include_usage: true, continuous_usage_stats: true }
        : { include_usage: true },
    });
    let res: IncomingMessage;
    try {
      res = await this.post(path, call, text, call.id);
    } catch (e) {
      if (call.signal.aborted) throw e;
      throw new UpstreamError(`${this.name}: ${(e as Error).message}`, undefined, true);
    }
    const status = res.statusCode ?? 0;
    if (status < 200 || status >= 300) {
      if (status === 404) this.modelsStale = true;
      const answer = await readText(res, ERROR_BODY_BYTES, SCRAPE_TIMEOUT_MS, this.opts).catch(
        () => '',
      );
      // A 404 for a model its own listing lacks is this backend's, not the request's.
      const model = String(call.body.model);
      const unlisted = status === 404 && this.listed?.ids.includes(model) === false;
      throw new UpstreamError(
        `${this.name}: HTTP ${status} ${answer.slice(0, 200)}`,
        status,
        true,
        answer.slice(0, ERROR_BODY_CHARS),
        unlisted,
        backendRetryAfterMs(res.headers),
      );
    }
    this.ran(String(call.body.model));
    const { clock, timers } = this.opts;
    const afterMs = this.opts.upstreamIdleMs ?? UPSTREAM_IDLE_MS;
    return relayStream(this.name, res, call, onToken, { clock, timers, afterMs });
  }

  /**
   * It answers a request for `model`: an adapter it serves is in one of its slots now, whether or
   * not a scrape finds its request running (a short one may end between two).
   */
  private ran(model: string): void {
    const last = this.last;
    if (last.loras === undefined || this.servable?.includes(model) !== true) return;
    const loras = this.residency.seen([model], last.maxLoras ?? 1);
    // Already its most recent: nothing to copy.
    if (loras !== last.loras) this.last = { ...last, loras };
  }

  /**
   * Sends a staged prompt's leading pieces (`staged-pieces.ts`), each once the one before has
   * ended, for the server's prefix cache to keep. A piece refused or failed ends the staging:
   * the request then goes whole, as it would unstaged. Only the call's abort is passed on.
   */
  private async stagePieces(path: string, call: UpstreamCall, staged: StagedCall): Promise<void> {
    const bodies = pieceBodies(call.kind, call.body, staged);
    for (let k = 0; k < bodies.length; k++) {
      const text = JSON.stringify(bodies[k]);
      try {
        const res = await this.post(path, call, text, `${call.id}-piece-${k + 1}`);
        // Its answer (a token, or a refusal) is read and dropped, within an error answer's bounds.
        await readText(res, ERROR_BODY_BYTES, SCRAPE_TIMEOUT_MS, this.opts);
        const status = res.statusCode ?? 0;
        if (status < 200 || status >= 300) return;
      } catch (e) {
        if (call.signal.aborted) throw e;
        return;
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    this.client.destroy();
  }

  private headers(extra: Record<string, string>): Record<string, string> {
    return this.opts.apiKey === undefined
      ? extra
      : { ...extra, authorization: `Bearer ${this.opts.apiKey}` };
  }

  /** POSTs JSON `text` to `path` for `call` (its abort and trace context) as request `id`. */
  private post(path: string, call: UpstreamCall, text: string, id: string) {
    return this.send(
      path,
      {
        method: 'POST',
        signal: call.signal,
        timeout: this.opts.upstreamIdleMs ?? UPSTREAM_IDLE_MS,
        headers: this.headers({
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(text)),
          'x-request-id': id,
          ...call.trace,
        }),
      },
      text,
    );
  }

  /**
   * One request on the keep-alive agent; resolves with the response head — within `headMs`,
   * when given, however its bytes trickle (the socket's idle timeout restarts at each).
   */
  private send(
    path: string,
    options: RequestOptions,
    body?: string,
    headMs?: Ms,
  ): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const req = this.client.request(this.opts.url + path, options);
      const { clock, timers } = this.opts;
      const late =
        headMs === undefined
          ? undefined
          : timers.at(clock.now() + headMs, () =>
              req.destroy(new Error(`${path}: no answer within ${headMs} ms`)),
            );
      req.once('response', (res) => {
        late?.cancel();
        resolve(res);
      });
      req.once('error', (e) => {
        late?.cancel();
        reject(e);
      });
      req.once('timeout', () =>
        req.destroy(new Error(`${path}: no byte for ${options.timeout} ms`)),
      );
      req.end(body);
    });
  }

  private scheduleScrape(afterMs: Ms): void {
    if (this.closed) return;
    this.timer = this.opts.timers.at(this.opts.clock.now() + afterMs, () => void this.scrape());
  }

  private async scrape(): Promise<void> {
    // Read beside the load, so a backend is first ready with its adapters already known.
    const due = this.scrapes++ % MODELS_EVERY_SCRAPES === 0 || this.modelsStale;
    this.modelsStale = false;
    const models = due ? this.models() : undefined;
    // Its gauges count every client's requests: this gateway's are those open here as they
    // were read — while the scrape was under way, the more of the two counts.
    const openAtSend = this.open;
    try {
      const res = await this.send(
        '/metrics',
        { headers: this.headers({}), timeout: SCRAPE_TIMEOUT_MS },
        undefined,
        SCRAPE_TIMEOUT_MS,
      );
      const text = await readText(res, SCRAPE_BODY_BYTES, SCRAPE_TIMEOUT_MS, this.opts);
      const ok = res.statusCode === 200;
      const read = ok ? loadFromExposition(text, this.opts.clock.now()) : undefined;
      const mine = Math.max(openAtSend, this.open);
      const scraped =
        read === undefined
          ? undefined
          : { ...read, others: Math.max(0, read.running + read.waiting - mine) };
      // vLLM names the adapters of running requests: those it still holds are remembered.
      const load =
        scraped?.loras === undefined
          ? scraped
          : {
              ...scraped,
              loras: this.residency.seen(scraped.loras, scraped.maxLoras ?? scraped.loras.length),
            };
      const told = await models;
      this.servable = told?.servable ?? this.servable;
      this.listed = told?.listed ?? this.listed;
      // A scrape that fails leaves the last figures to go stale rather than pretending idle.
      if (load !== undefined) {
        const known = this.servable ? { ...load, servable: this.servable } : load;
        this.last = this.listed ? { ...known, listed: this.listed } : known;
      }
      this.refused = false;
      this.lastError = !ok
        ? `HTTP ${res.statusCode}`
        : load === undefined
          ? "its /metrics has no running and waiting request counts (vLLM's, SGLang's, TGI's or llama.cpp's)"
          : undefined;
    } catch (e) {
      // Unreachable: the figures age out and the backend stops being ready — at once where
      // nothing listens on its port (a server killed or restarting), whose figures are void.
      this.lastError = (e as Error).message;
      this.refused = (e as NodeJS.ErrnoException).code === 'ECONNREFUSED';
    }
    this.scheduleScrape(this.opts.scrapeIntervalMs ?? 1_000);
  }

  /**
   * What its `/v1/models` lists — the adapters among the models (`servable`), and the listing —
   * or undefined when it does not answer with a list.
   */
  private async models(): Promise<
    { servable: string[] | undefined; listed: ModelListing | undefined } | undefined
  > {
    try {
      const res = await this.send(
        '/v1/models',
        { headers: this.headers({}), timeout: SCRAPE_TIMEOUT_MS },
        undefined,
        SCRAPE_TIMEOUT_MS,
      );
      const text = await readText(res, SCRAPE_BODY_BYTES, SCRAPE_TIMEOUT_MS, this.opts);
      if (res.statusCode !== 200) return undefined;
      const body: unknown = JSON.parse(text);
      return { servable: adaptersListed(body), listed: modelListing(body) };
    } catch {
      // Not JSON, or unreachable: what it serves stays as last known.
      return undefined;
    }
  }
}

/** The most a backend's Retry-After is taken for: a client is told no later than this. */
const RETRY_AFTER_CAP_MS: Ms = 10 * 60_000;

/** A backend's Retry-After, seconds or a date against its own `Date` header, capped. */
function backendRetryAfterMs(headers: IncomingHttpHeaders): Ms | undefined {
  const ms = parseRetryAfter(headers['retry-after'], headers.date);
  return ms === undefined ? undefined : Math.min(ms, RETRY_AFTER_CAP_MS);
}
