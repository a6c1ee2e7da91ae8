/**
 * The operator's endpoints, each behind the admin token (none without one): the autoscaler's
 * freeze (`/admin/autoscale`), the decision record of a request by its id, and the policy in
 * force with its reload (`/admin/policy`, `POST /admin/policy/reload`: 200 when the file is in
 * force, 409 when it changes what only a restart applies, 422 when it does not validate, 503
 * when it could not be read — so a config-reloading sidecar reads the answer from the status).
 */
import type { Hono, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { OpenAiError } from '../../openai/index.ts';
import type { OutcomeRecord } from '../../core/observe/outcome-record.ts';
import type { RejectReason } from '../../core/request/decision.ts';
import type { Ms } from '../../core/request/units.ts';
import { adminTokenMatches, bearerToken } from '../api-keys.ts';
import type { Gateway } from '../gateway.ts';
import type { PolicyReloader } from '../policy-reloader.ts';
import type { TextRing } from '../text-ring.ts';
import type { GatewayEnv } from './app.ts';

export interface AdminDeps {
  readonly gateway: Gateway;
  readonly adminToken?: string;
  readonly policyReload: PolicyReloader;
  readonly decisions: TextRing;
  readonly outcomes: TextRing;
  readonly nowMs: () => Ms;
  /** A refusal, counted and recorded under a fresh id it carries. */
  refused(e: OpenAiError, reason: RejectReason, headers?: Record<string, string>): Response;
  adminTokenRequired(): OpenAiError;
}

/** The methods each admin path takes: anything else there is a 405. */
export const ADMIN_ROUTES: Readonly<Record<string, string>> = {
  '/admin/autoscale': 'GET, HEAD, PUT',
  '/admin/policy': 'GET, HEAD',
  '/admin/policy/reload': 'POST',
};

/** The most an admin request's body may hold (`{"frozen": false}` is 17 bytes). */
const ADMIN_BODY_LIMIT_BYTES = 1024;

export function adminRoutes(app: Hono<GatewayEnv>, deps: AdminDeps): void {
  const { refused } = deps;
  // Without a token configured no one is let in: said so, or the operator hunts for a wrong one.
  const off = new OpenAiError(
    401,
    'the admin API is off: this gateway was started without --admin-token (or $GOODPUT_ADMIN_TOKEN)',
    null,
    'invalid_admin_token',
  );
  const adminRefused = (authorization: string | undefined) => {
    if (deps.adminToken === undefined) return refused(off, 'unauthenticated');
    return adminTokenMatches(bearerToken(authorization), deps.adminToken)
      ? null
      : refused(deps.adminTokenRequired(), 'unauthenticated');
  };
  const admin: MiddlewareHandler<GatewayEnv> = async (c, next) =>
    adminRefused(c.req.header('authorization')) ?? next();
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
  app.get('/admin/autoscale', admin, (c) => scaling(c));
  // The body is read only from an operator, and at most ADMIN_BODY_LIMIT_BYTES of it.
  const adminBody = bodyLimit({
    maxSize: ADMIN_BODY_LIMIT_BYTES,
    onError: () =>
      refused(
        new OpenAiError(413, 'request body: expected at most 1 KiB, got more', null),
        'payload_too_large',
      ),
  });
  app.put('/admin/autoscale', admin, adminBody, async (c) => {
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
  });
  app.get('/admin/policy', admin, (c) => c.json(deps.policyReload.status()));
  // The file is read again, whatever the body says (none is needed).
  app.post('/admin/policy/reload', admin, async (c) => {
    const outcome = await deps.policyReload.reload('admin');
    if (outcome.result === 'applied' || outcome.result === 'unchanged') return c.json(outcome);
    const status = { invalid: 422, refused: 409, error: 503 }[outcome.result];
    return refused(
      new OpenAiError(status, outcome.message, outcome.param, outcome.code),
      'invalid_request',
    );
  });
  app.get('/admin/decisions/:id', admin, (c) => {
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
