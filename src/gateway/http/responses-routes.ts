/**
 * The Responses API's stored responses, looked up as OpenAI's are (kept-responses.ts keeps
 * them): `GET /v1/responses/{id}` the response as its client got it last — or, with
 * `stream=true`, a background response's stream of events after `starting_after` (its events'
 * sequence numbers), then the rest as it runs (stream-readers.ts) — `DELETE` it,
 * `GET /v1/responses/{id}/input_items` the conversation it answered, a page at a time (`limit`
 * 1–100, default 20; `order` desc, the default, or asc; `after` an item's id). A response is
 * its tenant's alone, the tenant its API key (and fairness id) names, as for a completion.
 * `POST /v1/responses/{id}/cancel` cancels a background response (background.ts) that is
 * queued or in progress, and answers one that has ended as it ended; any other's is a 400.
 * Deleting a background response that runs stops it. Unknown ids are a 404, a store out of reach a 503 with a
 * Retry-After; each refusal is counted and recorded under the id its answer carries.
 */
import type { Context, Hono } from 'hono';
import type { RejectReason } from '../../core/request/decision.ts';
import type { TenantDirectory } from '../../core/config/tenant-schema.ts';
import {
  OpenAiError,
  describeValue,
  invalidRequest,
  listedItem,
  type InputItem,
} from '../../openai/index.ts';
import { isSharedStoreUnavailable } from '../shared/shared-store.ts';
import type { ApiKeys } from '../api-keys.ts';
import type { GatewayEnv } from './app.ts';
import { authenticate } from './completions.ts';
import { parseClientHeaders, tenantFor } from './client-headers.ts';
import { webInbound } from './inbound.ts';
import {
  deleteKept,
  loadKept,
  loadSettled,
  loadSettledHead,
  saveKept,
  type KeepingDeps,
  type KeptRecord,
} from './kept-records.ts';
import type { BackgroundRuns } from './background-runs.ts';
import { eventsAnswer } from './stream-readers.ts';
import { idHeaders } from './answer.ts';

/** The methods each stored-response path takes, by its pattern: anything else there is a 405. */
export const KEPT_ROUTES: readonly (readonly [RegExp, string])[] = [
  [/^\/v1\/responses\/[^/]+$/, 'GET, DELETE'],
  [/^\/v1\/responses\/[^/]+\/input_items$/, 'GET'],
  [/^\/v1\/responses\/[^/]+\/cancel$/, 'POST'],
];

export interface ResponsesRoutesDeps extends KeepingDeps {
  readonly keys: ApiKeys;
  readonly tenants: TenantDirectory;
  readonly epochMs: () => number;
  readonly newId: () => string;
  readonly background: BackgroundRuns;
  /** A refusal before it is sent: counted and recorded under a fresh id it carries. */
  readonly refused: (
    e: OpenAiError,
    reason: RejectReason,
    headers?: Record<string, string>,
  ) => Response;
}

const MAX_LIMIT = 100;
const ORDERS = ['asc', 'desc'] as const;

export function responsesRoutes(app: Hono<GatewayEnv>, deps: ResponsesRoutesDeps): void {
  /** The tenant asking and the id its path names, or the refusal that says why not. */
  const asking = (c: Context<GatewayEnv>): { tenant: string; id: string } | Response => {
    const id = c.req.param('id') ?? '';
    try {
      const inbound = webInbound(c.req.raw);
      const headers = parseClientHeaders(inbound.header, deps.epochMs());
      const key = authenticate(inbound, deps.keys);
      const tenant = tenantFor(key, headers.fairness, deps.keys.required, deps.tenants);
      if (!deps.keepResponses)
        return notFound(id, '; no responses are kept here (--responses-ttl 0)');
      return { tenant, id };
    } catch (e) {
      if (!(e instanceof OpenAiError)) throw e;
      return deps.refused(e, e.status === 401 ? 'unauthenticated' : 'invalid_request');
    }
  };
  /** What `op` found, none (a 404), or the store out of reach (a 503 with a Retry-After). */
  const reached = async <T>(id: string, op: () => Promise<T | undefined>) => {
    try {
      return (await op()) ?? notFound(id);
    } catch (e) {
      if (!isSharedStoreUnavailable(e)) throw e;
      const retryAfter = String(Math.max(1, Math.ceil(e.retryAfterMs / 1000)));
      const why = 'the store of responses is unreachable now; try again';
      const refusal = new OpenAiError(503, why, null, 'service_capacity');
      return deps.refused(refusal, 'service_capacity', { 'retry-after': retryAfter });
    }
  };
  /** The stored response the path names, for the tenant asking, or the refusal. */
  const found = async (c: Context<GatewayEnv>): Promise<KeptRecord | Response> => {
    const who = asking(c);
    if (who instanceof Response) return who;
    return reached(who.id, () => loadKept(deps, who.tenant, who.id));
  };
  const notFound = (id: string, why = '') =>
    deps.refused(
      new OpenAiError(
        404,
        `no response ${describeValue(id)} is stored for this tenant (never kept, expired or deleted)${why}`,
        'response_id',
        'not_found',
      ),
      'not_found',
    );
  const answer = (c: Context<GatewayEnv>, body: unknown) =>
    c.json(body, 200, idHeaders(deps.newId()));
  const invalid = (message: string, param: string) =>
    deps.refused(invalidRequest(message, param), 'invalid_request');

  app.get('/v1/responses/:id', async (c) => {
    const stream = c.req.query('stream');
    if (stream !== undefined && stream !== 'true' && stream !== 'false') {
      return invalid(`stream: expected true or false, got ${describeValue(stream)}`, 'stream');
    }
    const after = startingAfter(c.req.query('starting_after'));
    if (after instanceof OpenAiError) return deps.refused(after, 'invalid_request');
    const who = asking(c);
    if (who instanceof Response) return who;
    const kept = await reached(who.id, () => loadSettledHead(deps, who.tenant, who.id));
    if (kept instanceof Response || stream !== 'true') {
      return kept instanceof Response ? kept : answer(c, kept.response);
    }
    if (kept.streamed !== true) {
      return invalid(
        `stream: response ${describeValue(who.id)} was not created with background and stream true; only such a response can be streamed again (GET it whole)`,
        'stream',
      );
    }
    const { answer: events, out } = eventsAnswer(undefined, idHeaders(deps.newId()));
    void deps.background.follow(who.tenant, who.id, after, out);
    return events as Response;
  });
  app.delete('/v1/responses/:id', async (c) => {
    const who = asking(c);
    if (who instanceof Response) return who;
    const gone = await reached(who.id, async () =>
      (await deleteKept(deps, who.tenant, who.id)) ? true : undefined,
    );
    if (!(gone instanceof Response)) deps.background.cancel(who.tenant, who.id);
    return gone instanceof Response
      ? gone
      : answer(c, { id: who.id, object: 'response', deleted: true });
  });
  app.get('/v1/responses/:id/input_items', async (c) => {
    const page = pageAsked(c);
    if (page instanceof OpenAiError) return deps.refused(page, 'invalid_request');
    const kept = await found(c);
    if (kept instanceof Response) return kept;
    const items = page.order === 'asc' ? kept.input : [...kept.input].reverse();
    let from = 0;
    if (page.after !== undefined) {
      from = items.findIndex((it) => it.id === page.after) + 1;
      if (from === 0) {
        return invalid(
          `after: no item ${describeValue(page.after)} in this response's input`,
          'after',
        );
      }
    }
    const data: InputItem[] = items.slice(from, from + page.limit).map(listedItem);
    return answer(c, {
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
      has_more: from + page.limit < items.length,
    });
  });
  app.post('/v1/responses/:id/cancel', async (c) => {
    const who = asking(c);
    if (who instanceof Response) return who;
    const kept = await reached(who.id, () => loadSettled(deps, who.tenant, who.id));
    if (kept instanceof Response) return kept;
    const response = kept.response as KeptRecord['response'] & { background?: boolean };
    if (response.background !== true) {
      return invalid(
        `response ${describeValue(response.id)} is not a background response: only those can be cancelled`,
        'response_id',
      );
    }
    // Cancelled twice, or after its end: answered as it stands.
    if (response.status !== 'queued' && response.status !== 'in_progress') {
      return answer(c, response);
    }
    const cancelled = { ...response, status: 'cancelled' };
    // Marked first, so the replica that runs it (maybe not this one) stops it and keeps it so.
    const marked = await reached(who.id, async () => {
      await saveKept(deps, who.tenant, who.id, { ...kept, response: cancelled });
      return true;
    });
    if (marked instanceof Response) return marked;
    deps.background.cancel(who.tenant, who.id);
    return answer(c, cancelled);
  });
}

/** The sequence number a stream is taken up after: -1 (from its first event) when not given. */
function startingAfter(text: string | undefined): number | OpenAiError {
  if (text === undefined) return -1;
  const n = Number(text);
  if (text.trim() === '' || !Number.isSafeInteger(n) || n < 0) {
    return invalidRequest(
      `starting_after: expected an integer >= 0 (an event's sequence_number), got ${describeValue(text)}`,
      'starting_after',
    );
  }
  return n;
}

/** The page `input_items` asks for, or the error naming the parameter that is wrong. */
function pageAsked(c: Context<GatewayEnv>) {
  const limitText = c.req.query('limit');
  const limit = limitText === undefined ? 20 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    return invalidRequest(
      `limit: expected an integer in [1, ${MAX_LIMIT}], got ${describeValue(limitText)}`,
      'limit',
    );
  }
  const order = c.req.query('order') ?? 'desc';
  if (!(ORDERS as readonly string[]).includes(order)) {
    return invalidRequest(`order: expected asc or desc, got ${describeValue(order)}`, 'order');
  }
  return { limit, order, after: c.req.query('after') };
}
