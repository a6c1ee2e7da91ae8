/**
 * The gateway's HTTP surface as a Hono app (Web-standard Request/Response, testable in-process
 * with `app.request`): the OpenAI endpoints, `/v1/models`, `/metrics` (Prometheus text),
 * `/healthz` (the process answers), `/readyz` (at least one backend ready), and the admin
 * lookup of a decision record by request id, behind the admin token. Every error is OpenAI's
 * shape; bodies over the limit are refused before they are read whole.
 */
import { Hono, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { HttpBindings } from '@hono/node-server';
import {
  errorResponse,
  modelList,
  OpenAiError,
  payloadTooLarge,
  routeNotFound,
  serverError,
} from '../../openai/index.ts';
import { adminTokenMatches } from '../api-keys.ts';
import type { BoundedMap } from '../bounded-map.ts';
import type { DecisionRecord } from '../../core/observe/decision-record.ts';
import type { GatewayMetrics } from '../gateway-metrics.ts';
import { handleCompletion, type CompletionsDeps } from './completions.ts';

export interface GatewayAppDeps extends CompletionsDeps {
  readonly metrics: GatewayMetrics;
  readonly decisions: BoundedMap<DecisionRecord>;
  /** Admin endpoints are off without a token. */
  readonly adminToken?: string;
  readonly bodyLimitBytes?: number;
}

/** Served by Node, handlers reach its response (`c.env.outgoing`); in-process, env is empty. */
export type GatewayEnv = { Bindings: Partial<HttpBindings> };

export function createGatewayApp(deps: GatewayAppDeps): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  const limit = deps.bodyLimitBytes ?? 4 * 1024 * 1024;
  const tooLarge = () => errorResponse(payloadTooLarge(limit));
  const counted = bodyLimit({ maxSize: limit, onError: tooLarge });
  // A declared length is checked as it stands (Node's parser holds the body to it), so the
  // body is read once, straight from the socket; only a chunked body is counted as it streams.
  const limited: MiddlewareHandler<GatewayEnv> = (c, next) => {
    const length = c.req.header('content-length');
    if (length === undefined || c.req.header('transfer-encoding') !== undefined) {
      return counted(c, next);
    }
    return Number(length) > limit ? Promise.resolve(tooLarge()) : next();
  };

  app.post('/v1/chat/completions', limited, async (c) =>
    handleCompletion('chat', c.req.raw, await c.req.text(), deps, c.env?.outgoing),
  );
  app.post('/v1/completions', limited, async (c) =>
    handleCompletion('completion', c.req.raw, await c.req.text(), deps, c.env?.outgoing),
  );
  app.get('/v1/models', (c) =>
    c.json(modelList(deps.servedModels.map((id) => ({ id, created: 0, ownedBy: 'goodput' })))),
  );
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', (c) =>
    deps.gateway.ready ? c.json({ status: 'ready' }) : c.json({ status: 'no backend ready' }, 503),
  );
  app.get('/metrics', async (c) => {
    deps.gateway.observe();
    return c.body(await deps.metrics.registry.metrics(), 200, {
      'content-type': deps.metrics.registry.contentType,
    });
  });
  app.get('/admin/decisions/:id', (c) => {
    const auth = c.req.header('authorization') ?? '';
    const token = auth.startsWith('Bearer ') ? auth.slice(7) : undefined;
    if (deps.adminToken === undefined || !adminTokenMatches(token, deps.adminToken)) {
      return errorResponse(
        new OpenAiError(401, 'admin token required', null, 'invalid_admin_token'),
      );
    }
    const record = deps.decisions.get(c.req.param('id'), deps.nowMs());
    return record === undefined
      ? errorResponse(new OpenAiError(404, 'no decision recorded for this request id', 'id'))
      : c.json(record);
  });
  app.notFound((c) => errorResponse(routeNotFound(c.req.method, c.req.path)));
  app.onError((e) => {
    if (e instanceof OpenAiError) return errorResponse(e);
    console.error('goodput serve: unexpected error', e);
    return errorResponse(serverError('internal error'));
  });
  return app;
}
