/**
 * `createEngineServer`: the simulated vLLM-compatible server as a Hono app over a
 * `SimulatedBackend` — OpenAI completions, `/v1/models`, `/health` and vLLM's `/metrics`. It
 * knows only Web `Request`/`Response`, so tests drive it in-process with `app.request(...)` and
 * `serveEngine` puts it on a socket. Main rule: no input can crash it — every failure is an
 * OpenAI error body with its status, and anything unexpected is a 500 of the same shape.
 */
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Clock } from '../core/ports/clock.ts';
import type { Timers } from '../core/ports/timers.ts';
import { SeededRng } from '../runtime/seeded-rng.ts';
import { wallClock } from '../runtime/wall-clock.ts';
import { wallTimers } from '../runtime/wall-timers.ts';
import { lengthTable } from '../sim/workload/sharegpt-lengths.ts';
import {
  errorResponse,
  OpenAiError,
  isOpenAiError,
  payloadTooLarge,
  routeNotFound,
  serverError,
} from '../openai/errors.ts';
import { modelList } from '../openai/responses.ts';
import { chatRoute, completionRoute, responsesRoute, type RouteDeps } from './completion-routes.ts';
import { ENGINE_SERVER_DEFAULTS, type EngineServerSpec, resolveEngine } from './engine-options.ts';
import { EngineMetrics } from './engine-metrics.ts';
import type { LengthSampler } from './request-plan.ts';
import { SimulatedBackend } from './simulated-backend.ts';
import { requireApiKey } from './api-key.ts';

export interface EngineServerOptions extends Partial<Omit<EngineServerSpec, 'faults'>> {
  readonly faults?: Partial<EngineServerSpec['faults']>;
  /** Default: the wall clock and its timers. */
  readonly clock?: Clock;
  readonly timers?: Timers;
  /** Unix time in ms at the clock's 0, for `created` fields; default: the wall clock's origin. */
  readonly clockOriginUnixMs?: number;
  /** Natural output lengths; default: `shareGptSampler()`. */
  readonly lengths?: LengthSampler;
  /** Told of unexpected errors (bugs), which are answered 500. */
  readonly onInternalError?: (e: unknown) => void;
  /** vLLM's `--api-key`: the keys `/v1` paths need (api-key.ts); none: open. */
  readonly apiKeys?: readonly string[];
}

export interface EngineServer {
  readonly app: Hono;
  readonly backend: SimulatedBackend;
  readonly metrics: EngineMetrics;
  readonly servedModelName: string;
  /**
   * Begins a drain: `/health` answers 503 and new requests get 503 `shutting_down`, while those
   * accepted run to their end (`backend.whenIdle()`).
   */
  drain(): void;
  /** Stops the engine; open streams end broken, later requests get 503. */
  close(): void;
}

/** The methods each path served takes: another there is a 405 naming them, not a 404. */
const ROUTES: Readonly<Record<string, string>> = {
  '/v1/chat/completions': 'POST',
  '/v1/completions': 'POST',
  '/v1/responses': 'POST',
  '/tokenize': 'POST',
  '/detokenize': 'POST',
  '/v1/models': 'GET, HEAD',
  '/health': 'GET, HEAD',
  '/ping': 'GET, HEAD, POST',
  '/metrics': 'GET, HEAD',
};

/** A caller's request id the engine names its response after; anything else gets a fresh one. */
const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** Output lengths of the `sharegpt-sarathi` table, for requests that set no `max_tokens`. */
export function shareGptSampler(): LengthSampler {
  const { output, rows } = lengthTable('sharegpt-sarathi');
  return (u) => output[Math.min(rows - 1, Math.floor(u * rows))];
}

export function createEngineServer(options: EngineServerOptions = {}): EngineServer {
  const spec: EngineServerSpec = {
    ...ENGINE_SERVER_DEFAULTS,
    ...withoutUndefined(options),
    faults: { ...ENGINE_SERVER_DEFAULTS.faults, ...withoutUndefined(options.faults ?? {}) },
  };
  const { config, profile, servedModelName } = resolveEngine(spec);
  const clock = options.clock ?? wallClock;
  const origin =
    options.clockOriginUnixMs ?? (options.clock === undefined ? performance.timeOrigin : 0);
  const rng = new SeededRng(spec.seed);
  const metrics: EngineMetrics = new EngineMetrics(
    servedModelName,
    () => backend,
    config.maxModelLen,
    origin,
  );
  const backend: SimulatedBackend = new SimulatedBackend({
    config,
    profile,
    clock,
    timers: options.timers ?? wallTimers(clock),
    rng: rng.fork('requests'),
    faults: spec.faults,
    lengths: options.lengths ?? shareGptSampler(),
    observer: metrics,
  });
  // Response ids: a seeded per-server tag, so ids from two servers with different seeds differ.
  const tag = Math.floor(rng.fork('ids').next() * 0xffffffff)
    .toString(16)
    .padStart(8, '0');
  let issued = 0;
  let serving = true;
  const unixSeconds = () => Math.floor((origin + clock.now()) / 1000);
  const deps: RouteDeps = {
    backend,
    servedModelName,
    imageTokens: spec.imageTokens,
    nextId: (requestId) =>
      requestId !== undefined && REQUEST_ID.test(requestId)
        ? requestId
        : tag + (issued++).toString(16),
    unixSeconds,
  };
  const startedAt = unixSeconds();

  const app = new Hono();
  const limit = bodyLimit({
    maxSize: spec.maxBodyBytes,
    onError: () => errorResponse(payloadTooLarge(spec.maxBodyBytes)),
  });
  requireApiKey(app, options.apiKeys ?? []);
  const health = (c: Context) => (serving ? c.body(null, 200) : c.body(null, 503));
  app.get('/health', health);
  // vLLM's probe for SageMaker, by either method: the same answer as /health.
  app.on(['GET', 'POST'], '/ping', health);
  app.get('/v1/models', (c) =>
    c.json(
      modelList([
        {
          id: servedModelName,
          created: startedAt,
          ownedBy: 'goodput',
          root: spec.model,
          parent: null,
          maxModelLen: config.maxModelLen,
        },
        // vLLM lists each LoRA adapter as a model whose parent is the base model.
        ...(config.loraModules ?? []).map((name) => ({
          id: name,
          created: startedAt,
          ownedBy: 'goodput',
          root: name,
          parent: servedModelName,
          maxModelLen: config.maxModelLen,
        })),
      ]),
    ),
  );
  app.get('/metrics', async (c) => {
    const { body, contentType } = await metrics.scrape();
    return c.body(body, 200, { 'content-type': contentType });
  });
  app.post('/v1/chat/completions', limit, (c) => chatRoute(c, deps));
  app.post('/v1/completions', limit, (c) => completionRoute(c, deps));
  app.post('/v1/responses', limit, (c) => responsesRoute(c, deps));
  // vLLM's tokenizer endpoints: a simulated engine has no tokenizer, and says so.
  for (const path of ['/tokenize', '/detokenize']) {
    app.post(path, () =>
      errorResponse(
        new OpenAiError(
          404,
          `POST ${path}: not served by goodput engine, which has no tokenizer`,
          null,
          'not_found',
        ),
      ),
    );
  }
  app.notFound((c) => {
    const allowed = ROUTES[c.req.path];
    if (allowed === undefined) return errorResponse(routeNotFound(c.req.method, c.req.path));
    const why = `${c.req.method} ${c.req.path}: method not allowed (allowed: ${allowed})`;
    return errorResponse(new OpenAiError(405, why, null, 'method_not_allowed'), { allow: allowed });
  });
  app.onError((e) => {
    if (isOpenAiError(e)) return errorResponse(e);
    options.onInternalError?.(e);
    return errorResponse(
      serverError(`internal error: ${e instanceof Error ? e.message : String(e)}`),
    );
  });

  return {
    app,
    backend,
    metrics,
    servedModelName,
    drain() {
      serving = false;
      backend.drain();
    },
    close() {
      serving = false;
      backend.close();
    },
  };
}

function withoutUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
