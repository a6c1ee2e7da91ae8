/**
 * The gateway's HTTP surface as a Hono app (Web-standard Request/Response, testable in-process
 * with `app.request`): the OpenAI endpoints, `/v1/models` (behind the API key when keys are
 * configured, as OpenAI's is), `/metrics` (Prometheus text), `/healthz` (the process answers),
 * `/readyz` (a backend is usable and the gateway is not draining), `/health` (the same answer
 * at vLLM's probe path, so a deployment that probed vLLM probes the gateway unchanged), the
 * Responses API's stored responses (responses-routes.ts), and the admin lookup of a decision
 * record by request id, behind the admin token. Every error is OpenAI's shape; a known path asked
 * with the wrong method is a 405 naming the methods it takes (`Allow`). Nothing a client sends is
 * an error of the gateway's: only a bug is a 500, and it is logged.
 */
import { Hono, type Context } from 'hono';
import { serverRoutes, type Forward } from './server-routes.ts';
import { KEPT_ROUTES, responsesRoutes } from './responses-routes.ts';
import { bodyLimit } from 'hono/body-limit';
import type { HttpBindings } from '@hono/node-server';
import {
  OpenAiError,
  errorResponse,
  modelList,
  routeNotFound,
  serverError,
} from '../../openai/index.ts';
import { adminTokenMatches, basicPassword, bearerToken } from '../api-keys.ts';
import { reportPage } from '../../report/report-page.ts';
import { withoutEmptyCharts, type ReportDoc } from '../../report/chart-spec.ts';
import type { OutcomeRecord } from '../../core/observe/outcome-record.ts';
import type { TextRing } from '../text-ring.ts';
import type { RejectReason } from '../../core/request/decision.ts';
import type { OpsLog } from '../ops-log.ts';
import { COMPLETION_PATHS, handleCompletion, type CompletionsDeps } from './completions.ts';
import { toResponse } from './answer.ts';
import { webInbound } from './inbound.ts';

export interface GatewayAppDeps extends CompletionsDeps {
  /** Recent decision records by request id, as JSON text. */
  readonly decisions: TextRing;
  /** Outcome records by request id: how a dispatched request ended. */
  readonly outcomes: TextRing;
  /** Admin endpoints are off without a token; the dashboard is open without one. */
  readonly adminToken?: string;
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
  '/admin/autoscale': 'GET, HEAD, PUT',
  '/dashboard': 'GET, HEAD',
  '/dashboard/data': 'GET, HEAD',
  '/tokenize': 'POST',
  '/detokenize': 'POST',
};

/** The most an admin request's body may hold (`{"frozen": false}` is 17 bytes). */
const ADMIN_BODY_LIMIT_BYTES = 1024;

/** How often the dashboard page asks for new data. */
const DASHBOARD_REFRESH_MS = 2000;

export function createGatewayApp(deps: GatewayAppDeps): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  /** A refusal outside the completion routes: counted, recorded under a fresh id it carries. */
  const refused = (e: OpenAiError, reason: RejectReason, headers: Record<string, string> = {}) => {
    const id = deps.newId();
    deps.gateway.refuseUnread({ requestId: id, tenant: null, cls: null, reason, status: e.status });
    return errorResponse(e, {
      ...headers,
      'x-goodput-request-id': id,
      'x-goodput-reason': reason,
    });
  };

  // Served by Node, these two never reach Hono (node-listener.ts); in-process they do.
  for (const [path, kind] of Object.entries(COMPLETION_PATHS)) {
    app.post(path, async (c) =>
      toResponse(await handleCompletion(kind, webInbound(c.req.raw), deps, c.env?.outgoing)),
    );
  }
  app.get('/v1/models', (c) => {
    if (deps.keys.required) {
      const key = bearerToken(c.req.header('authorization'));
      if (key === undefined || deps.keys.tenantOf(key) === undefined) {
        const e = new OpenAiError(401, 'missing or invalid API key', null, 'invalid_api_key');
        return refused(e, 'unauthenticated');
      }
    }
    // As vLLM lists them: the base model first, each LoRA adapter with it as its parent.
    const [base] = deps.servedModels;
    return c.json(
      modelList(
        deps.servedModels.map((id, i) => ({
          id,
          created: 0,
          ownedBy: 'goodput',
          parent: i === 0 ? null : base,
        })),
      ),
    );
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
  const adminRefused = (authorization: string | undefined) =>
    deps.adminToken === undefined || !adminTokenMatches(bearerToken(authorization), deps.adminToken)
      ? refused(adminTokenRequired(), 'unauthenticated')
      : null;
  // An operator's freeze of the autoscaler (an incident, a rollout): decisions are not taken.
  const scaling = (c: { json: (v: unknown) => Response }) => {
    const frozen = deps.gateway.scalingFrozen;
    return frozen === null
      ? refused(
          new OpenAiError(404, 'no autoscaler is running (--autoscaler none)', null),
          'not_found',
        )
      : c.json({ frozen });
  };
  app.get('/admin/autoscale', (c) => adminRefused(c.req.header('authorization')) ?? scaling(c));
  // The body is read only from an operator, and at most ADMIN_BODY_LIMIT_BYTES of it.
  const adminBody = bodyLimit({
    maxSize: ADMIN_BODY_LIMIT_BYTES,
    onError: () =>
      refused(
        new OpenAiError(413, 'request body: expected at most 1 KiB, got more', null),
        'payload_too_large',
      ),
  });
  app.put(
    '/admin/autoscale',
    (c, next) => adminRefused(c.req.header('authorization')) ?? next(),
    adminBody,
    async (c) => {
      const invalid = (message: string, param: string | null = null) =>
        refused(new OpenAiError(400, message, param), 'invalid_request');
      let body: unknown;
      try {
        body = await c.req.json();
      } catch {
        return invalid('expected a JSON body {"frozen": true|false}');
      }
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        return invalid('expected a JSON body {"frozen": true|false}');
      }
      const unknown = Object.keys(body).find((k) => k !== 'frozen');
      if (unknown !== undefined) {
        return invalid(`${unknown.slice(0, 80)}: unknown field (expected only "frozen")`, unknown);
      }
      const { frozen } = body as { frozen?: unknown };
      if (typeof frozen !== 'boolean') {
        const got = JSON.stringify(frozen)?.slice(0, 80) ?? 'nothing';
        return invalid(`frozen: expected true or false, got ${got}`, 'frozen');
      }
      deps.gateway.freezeScaling(frozen);
      return scaling(c);
    },
  );
  responsesRoutes(app, { ...deps, tenants: deps.policy.tenants, refused });
  serverRoutes(app, {
    forward: deps.forward,
    bodyLimitBytes: deps.bodyLimitBytes,
    newId: deps.newId,
    counted: (path, status) => deps.metrics.serverRequests.inc({ path, status: String(status) }),
    refused,
  });
  app.get('/admin/decisions/:id', (c) => {
    const denied = adminRefused(c.req.header('authorization'));
    if (denied !== null) return denied;
    const id = c.req.param('id');
    const record = deps.decisions.get(id, deps.nowMs());
    if (record === undefined) {
      return refused(
        new OpenAiError(404, 'no decision recorded for this request id', 'id'),
        'not_found',
      );
    }
    const ended = deps.outcomes.get(id, deps.nowMs());
    return c.body(ended === undefined ? record : withOutcome(record, ended), 200, {
      'content-type': 'application/json',
    });
  });
  app.notFound((c) => {
    const path = c.req.path;
    const allowed = ROUTES[path] ?? KEPT_ROUTES.find(([pattern]) => pattern.test(path))?.[1];
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
    return errorResponse(serverError('internal error'), { 'x-goodput-request-id': id });
  });
  return app;
}

/**
 * A decision record with how its request ended: its keys, and `outcome` — the outcome record's,
 * with the time it ended (`at_ms`). The texts stay as stored until someone looks one up.
 */
function withOutcome(decision: string, outcome: string): string {
  const ended = JSON.parse(outcome) as OutcomeRecord;
  const record = JSON.parse(decision) as Record<string, unknown>;
  return JSON.stringify({ ...record, outcome: { at_ms: ended.at_ms, ...ended.outcome } });
}
