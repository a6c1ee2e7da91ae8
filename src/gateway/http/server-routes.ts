/**
 * vLLM's own endpoints that a client of vLLM calls beside the completions: `POST /tokenize` and
 * `POST /detokenize`. They run on a vLLM's API server, not on its GPU, so they take no part in
 * admission; but they are behind the API key like every endpoint that reaches a backend, and a
 * `model` the key's tenant may not use is, to it, one that does not exist (404). Each goes, as
 * it came, to the next ready server backend, and its answer comes back as the server gave it (a
 * 4xx is the request's, as vLLM words it). Its body is read as a completion's is (bounded,
 * declared JSON, unencoded, strict UTF-8). No server ready is a 503, one that fails, goes silent
 * or answers a 5xx a 502 naming it (its own words logged under the request's id). A client that
 * leaves, while it uploads or while the server works, takes its request with it: a 499, nobody's
 * failure. The embedded fleet has no tokenizer: there they are a 404 saying so. Every one is
 * counted, by path and status (`goodput_server_requests_total`), its answer carries an id, and
 * a refusal is recorded under it.
 */
import type { IncomingMessage } from 'node:http';
import { upstreamClient } from '../upstream-client.ts';
import type { Hono } from 'hono';
import type { Clock } from '../../core/ports/clock.ts';
import type { Timers } from '../../core/ports/timers.ts';
import type { RejectReason } from '../../core/request/decision.ts';
import { OpenAiError, errorBody, modelNotFound, parseJsonText } from '../../openai/index.ts';
import { readText } from '../bounded-body.ts';
import { isRequestStopped } from '../stop.ts';
import { readBody } from './read-body.ts';
import type { Backend } from '../backend.ts';
import type { OpsLog } from '../ops-log.ts';
import { serverBaseUrl } from '../../openai/server-url.ts';
import type { GatewayEnv } from './app.ts';
import { idHeaders } from './answer.ts';
import { unreadReason } from './refusals.ts';

export const SERVER_PATHS = ['/tokenize', '/detokenize'] as const;

/** How long a server may take to answer one, and the most of an answer read. */
const SERVER_ANSWER_MS = 30_000;
const SERVER_ANSWER_BYTES = 16 * 1024 * 1024;

export interface ServerAnswer {
  readonly status: number;
  readonly body: string;
  readonly contentType: string;
}

/** Sends `body` to `path` of a ready server; undefined when none is ready. */
export type Forward = (
  path: string,
  body: string,
  id: string,
  signal?: AbortSignal,
) => Promise<ServerAnswer | undefined>;

/**
 * The server backends in turn (`urls[i]` is `backends[i]`'s), the next ready one taking each,
 * with the key they require, if any (the gateway's own, not the client's).
 */
export function serverForwarder(
  urls: readonly string[],
  backends: readonly Backend[],
  at: { readonly clock: Clock; readonly timers: Timers; readonly apiKey?: string },
): Forward {
  const auth = at.apiKey === undefined ? {} : { authorization: `Bearer ${at.apiKey}` };
  const bases = urls.map((url) => serverBaseUrl(url));
  const clients = bases.map((base) => upstreamClient(base, { keepAlive: true }));
  let next = 0;
  return async (path, body, id, signal) => {
    for (let tried = 0; tried < urls.length; tried++) {
      const i = next++ % urls.length;
      if (!backends[i].load().ready) continue;
      const res = await new Promise<IncomingMessage>((resolve, reject) => {
        const req = clients[i].request(bases[i] + path, {
          method: 'POST',
          timeout: SERVER_ANSWER_MS,
          signal,
          headers: {
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
            'x-request-id': id,
            ...auth,
          },
        });
        req.once('response', resolve);
        req.once('error', reject);
        req.once('timeout', () => req.destroy(new Error(`no answer in ${SERVER_ANSWER_MS} ms`)));
        req.end(body);
      });
      const text = await readText(res, SERVER_ANSWER_BYTES, SERVER_ANSWER_MS, at);
      const contentType = res.headers['content-type'] ?? 'application/json';
      return { status: res.statusCode ?? 502, body: text, contentType };
    }
    return undefined;
  };
}

export interface ServerRoutesDeps {
  /** Where these go; undefined on the embedded fleet. */
  readonly forward: Forward | undefined;
  readonly bodyLimitBytes: number;
  readonly newId: () => string;
  /** Counts one by path and status. */
  readonly counted: (path: string, status: number) => void;
  /** A refusal before it is sent: recorded under the id `id` it carries. */
  readonly refused: (e: OpenAiError, reason: RejectReason, id: string) => Response;
  /** The tenant of an `Authorization` header's key; undefined for a missing or bad key. */
  readonly keyTenant: (authorization: string | undefined) => string | undefined;
  /** The 401 of a missing or bad key, under the id `id`. */
  readonly unauthenticated: (id: string) => Response;
  /** Where a server's failure is told in full: the client is told none of its address. */
  readonly log: OpsLog;
  /** The served models a tenant may use. */
  readonly modelsFor: (tenant: string) => readonly string[];
}

export function serverRoutes(app: Hono<GatewayEnv>, deps: ServerRoutesDeps): void {
  for (const path of SERVER_PATHS) {
    app.post(path, async (c) => {
      const id = deps.newId();
      const answer = (status: number, text: string, type = 'application/json') => {
        deps.counted(path, status);
        return c.body(text, status as 200, { 'content-type': type, ...idHeaders(id) });
      };
      const refuse = (e: OpenAiError, reason: RejectReason) => {
        deps.counted(path, e.status);
        return deps.refused(e, reason, id);
      };
      const tenant = deps.keyTenant(c.req.header('authorization'));
      if (tenant === undefined) {
        deps.counted(path, 401);
        return deps.unauthenticated(id);
      }
      const forward = deps.forward;
      if (forward === undefined) {
        const why = `POST ${path}: not served by the simulated fleet, which has no tokenizer`;
        return refuse(new OpenAiError(404, why, null, 'not_found'), 'not_found');
      }
      // Read as a completion's body is (bounded, JSON, UTF-8) and refused here if not JSON, as
      // the server would; its fields are the server's to judge, but for a model the tenant may
      // not use.
      let body: string;
      let json: unknown;
      try {
        body = await readBody(c.req.raw, deps.bodyLimitBytes);
        json = parseJsonText(body);
      } catch (e) {
        if (isRequestStopped(e)) return answer(499, '');
        if (e instanceof OpenAiError) return refuse(e, unreadReason(e.status));
        throw e;
      }
      const model = (json as { model?: unknown } | null)?.model;
      const models = deps.modelsFor(tenant);
      if (typeof model === 'string' && !models.includes(model)) {
        return refuse(modelNotFound(model, models), 'unknown_model');
      }
      const failed = (err: string) => {
        deps.log.warn(
          { path, request_id: id, err },
          `POST ${path} ${id}: the server failed: ${err}`,
        );
        const why = `POST ${path}: the server failed before it answered`;
        return answer(502, JSON.stringify(errorBody(502, why, null, 'upstream_error')));
      };
      const signal = c.req.raw.signal;
      let got: ServerAnswer | undefined;
      try {
        got = await forward(path, body, id, signal);
      } catch (e) {
        // A client that left took its request with it: nobody's failure.
        return signal.aborted ? answer(499, '') : failed((e as Error).message);
      }
      // Its own failure, in whatever shape: the client hears the gateway's 502.
      if (got !== undefined && got.status >= 500) {
        return failed(`HTTP ${got.status}: ${got.body.slice(0, 200)}`);
      }
      if (got === undefined) {
        const why = `POST ${path}: no server backend is ready`;
        return refuse(new OpenAiError(503, why, null, 'no_ready_replica'), 'no_ready_replica');
      }
      return answer(got.status, got.body, got.contentType);
    });
  }
}
