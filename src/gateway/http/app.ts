/**
 * The gateway's HTTP surface as a Hono app (Web-standard Request/Response, testable in-process
 * with `app.request`): the OpenAI endpoints, `/v1/models` (behind the API key when keys are
 * configured, as OpenAI's is), `/metrics` (Prometheus text), `/healthz` (the process answers),
 * `/readyz` (a backend is usable and the gateway is not draining), `/health` (the same answer
 * at vLLM's probe path, so a deployment that probed vLLM probes the gateway unchanged), the
 * Responses API's stored responses (responses-routes.ts), and the operator's endpoints behind
 * the admin token (admin-routes.ts). Every error is OpenAI's shape; a known path asked
 * with the wrong method is a 405 naming the methods it takes (`Allow`). Nothing a client sends is
 * an error of the gateway's: only a bug is a 500, and it is logged.
 */
import { Hono, type Context } from 'hono';
import { serverRoutes, type Forward } from './server-routes.ts';
import { KEPT_ROUTES, responsesRoutes } from './responses-routes.ts';
import type { HttpBindings } from '@hono/node-server';
import {
  OpenAiError,
  errorResponse,
  modelList,
  modelNotFound,
  routeNotFound,
  serverError,
} from '../../openai/index.ts';
import { adminTokenMatches, basicPassword, bearerToken } from '../api-keys.ts';
import { reportPage } from '../../report/report-page.ts';
import { withoutEmptyCharts, type ReportDoc } from '../../report/chart-spec.ts';
import type { TextRing } from '../text-ring.ts';
import type { RejectReason } from '../../core/request/decision.ts';
import { modelsOf } from '../../core/admission/contract-gate.ts';
import { lookupTenant } from '../../core/config/tenant-schema.ts';
import type { OpsLog } from '../ops-log.ts';
import { COMPLETION_PATHS, handleCompletion, type CompletionsDeps } from './completions.ts';
import { idHeaders, toResponse } from './answer.ts';
import { ADMIN_ROUTES, adminRoutes } from './admin-routes.ts';
import type { PolicyReloader } from '../policy-reloader.ts';
import { webInbound } from './inbound.ts';

export interface GatewayAppDeps extends CompletionsDeps {
  /** Recent decision records by request id, as JSON text. */
  readonly decisions: TextRing;
  /** Outcome records by request id: how a dispatched request ended. */
  readonly outcomes: TextRing;
  /** Admin endpoints are off without a token; the dashboard is open without one. */
  readonly adminToken?: string;
  /** The policy in force, and its reloads (`/admin/policy`). */
  readonly policyReload: PolicyReloader;
  /** The live dashboard's document (`/dashboard`, `/dashboard/data`). */
  dashboard(): ReportDoc;
  readonly log: OpsLog;
  /** Where `/tokenize` and `/detokenize` go (server-routes.ts); undefined on the embedded fleet. */
  readonly forward: Forward | undefined;
}

/** Served by Node, handlers reach its response (`c.env.outgoing`); in-process, env is empty. */
export type GatewayEnv = { Bindings: Partial<HttpBindings> };

/** The methods each known path takes: anything else there is a 405, not a 404. */
const ROUTES: Readonly<Record<string, string>> = {
  '/v1/chat/completions': 'POST',
  '/v1/completions': 'POST',
  '/v1/responses': 'POST',
  '/v1/models': 'GET, HEAD',
  '/healthz': 'GET, HEAD',
  '/readyz': 'GET, HEAD',
  '/health': 'GET, HEAD',
  '/metrics': 'GET, HEAD',
  ...ADMIN_ROUTES,
  '/dashboard': 'GET, HEAD',
  '/dashboard/data': 'GET, HEAD',
  '/tokenize': 'POST',
  '/detokenize': 'POST',
};

/** `GET /v1/models/{model}`, a model's name holding slashes or not. */
const MODEL_ROUTE: readonly [RegExp, string] = [/^\/v1\/models\/.+$/, 'GET, HEAD'];

/** A path's part as it names something: percent-decoded, or as sent where that fails. */
function decodedSegment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** How often the dashboard page asks for new data. */
const DASHBOARD_REFRESH_MS = 2000;

export function createGatewayApp(deps: GatewayAppDeps): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  /** A refusal outside the completion routes: counted, recorded under a fresh id it carries. */
  const refused = (
    e: OpenAiError,
    reason: RejectReason,
    headers: Record<string, string> = {},
    id = deps.newId(),
  ) => {
    deps.gateway.refuseUnread({ requestId: id, tenant: null, cls: null, reason, status: e.status });
    return errorResponse(e, {
      ...headers,
      ...idHeaders(id),
      'x-goodput-reason': reason,
    });
  };

  // Served by Node, these two never reach Hono (node-listener.ts); in-process they do.
  for (const [path, kind] of Object.entries(COMPLETION_PATHS)) {
    app.post(path, async (c) =>
      toResponse(await handleCompletion(kind, webInbound(c.req.raw), deps, c.env?.outgoing)),
    );
  }
  /** The tenant of a request's key: `default` when keys are not required, none for a bad key. */
  const keyTenant = (authorization: string | undefined): string | undefined => {
    if (!deps.keys.required) return 'default';
    const key = bearerToken(authorization);
    return key === undefined ? undefined : deps.keys.tenantOf(key);
  };
  const unauthenticated = (id?: string) =>
    refused(
      new OpenAiError(401, 'missing or invalid API key', null, 'invalid_api_key'),
      'unauthenticated',
      {},
      id,
    );
  /** The served models a tenant may use: to it, the others do not exist. */
  const modelsFor = (tenant: string) =>
    modelsOf(lookupTenant(deps.policy.tenants, tenant), deps.servedModels);
  /** As vLLM lists them: the base model first, each LoRA adapter with it as its parent. */
  const modelCards = (tenant: string) => {
    const [base] = deps.servedModels;
    const parent = (id: string) => (id === base ? null : base);
    const ids = modelsFor(tenant);
    return modelList(ids.map((id) => ({ id, created: 0, ownedBy: 'goodput', parent: parent(id) })));
  };
  // Only the models the key's tenant may use (OpenAI lists a key's models).
  app.get('/v1/models', (c) => {
    const tenant = keyTenant(c.req.header('authorization'));
    if (tenant === undefined) return unauthenticated();
    return c.json(modelCards(tenant), 200, idHeaders(deps.newId()));
  });
  // One of them (`client.models.retrieve`); a served model's name may hold slashes.
  app.get('/v1/models/*', (c) => {
    const id = deps.newId();
    const tenant = keyTenant(c.req.header('authorization'));
    if (tenant === undefined) return unauthenticated(id);
    const model = decodedSegment(c.req.path.slice('/v1/models/'.length));
    const card = modelCards(tenant).data.find((m) => m.id === model);
    if (card !== undefined) return c.json(card, 200, idHeaders(id));
    return refused(modelNotFound(model, modelsFor(tenant)), 'unknown_model', {}, id);
  });
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  const readiness = (c: Context<GatewayEnv>) => {
    if (deps.inFlight.draining) return c.json({ status: 'draining' }, 503);
    return deps.gateway.ready
      ? c.json({ status: 'ready' })
      : c.json({ status: 'no backend ready' }, 503);
  };
  app.get('/readyz', readiness);
  app.get('/health', readiness);
  app.get('/metrics', async (c) => {
    deps.gateway.observe();
    return c.body(await deps.metrics.registry.metrics(), 200, {
      'content-type': deps.metrics.registry.contentType,
    });
  });
  // The dashboard is for people: a browser sends the admin token as Basic auth's password
  // (any user name), so a 401 asks for it; scripts may send it as a bearer token.
  const dashboardAllowed = (authorization: string | undefined) =>
    deps.adminToken === undefined ||
    adminTokenMatches(bearerToken(authorization) ?? basicPassword(authorization), deps.adminToken);
  const adminTokenRequired = () =>
    new OpenAiError(401, 'admin token required', null, 'invalid_admin_token');
  const dashboardRefused = () =>
    refused(adminTokenRequired(), 'unauthenticated', {
      'www-authenticate': 'Basic realm="goodput dashboard", charset="UTF-8"',
    });
  app.get('/dashboard', (c) =>
    dashboardAllowed(c.req.header('authorization'))
      ? c.html(
          reportPage(deps.dashboard(), { url: '/dashboard/data', everyMs: DASHBOARD_REFRESH_MS }),
        )
      : dashboardRefused(),
  );
  app.get('/dashboard/data', (c) =>
    dashboardAllowed(c.req.header('authorization'))
      ? c.json(withoutEmptyCharts(deps.dashboard()), 200, { 'cache-control': 'no-store' })
      : dashboardRefused(),
  );
  adminRoutes(app, { ...deps, refused, adminTokenRequired });
  responsesRoutes(app, { ...deps, tenants: deps.policy.tenants, refused });
  serverRoutes(app, {
    forward: deps.forward,
    bodyLimitBytes: deps.bodyLimitBytes,
    newId: deps.newId,
    counted: (path, status) => deps.metrics.serverRequests.inc({ path, status: String(status) }),
    refused: (e, reason, id) => refused(e, reason, {}, id),
    keyTenant,
    unauthenticated,
    modelsFor,
    log: deps.log,
  });
  app.notFound((c) => {
    const path = c.req.path;
    const allowed =
      ROUTES[path] ?? [...KEPT_ROUTES, MODEL_ROUTE].find(([pattern]) => pattern.test(path))?.[1];
    if (allowed === undefined) {
      return refused(routeNotFound(c.req.method, c.req.path), 'not_found');
    }
    const e = new OpenAiError(
      405,
      `${c.req.method} ${c.req.path}: method not allowed (allowed: ${allowed})`,
      null,
      'method_not_allowed',
    );
    return refused(e, 'method_not_allowed', { allow: allowed });
  });
  app.onError((e) => {
    if (e instanceof OpenAiError) return errorResponse(e);
    // A bug: logged under an id the answer carries, so the two can be matched.
    const id = deps.newId();
    deps.log.error({ err: e, request_id: id }, 'unexpected error');
    return errorResponse(serverError('internal error'), idHeaders(id));
  });
  return app;
}
