/**
 * The Responses API's background mode (`background: true`): the response runs apart from its
 * request, as OpenAI runs one. Admission decides as for any request, before anything is
 * answered: refused, the client hears why (429 or 503 with a Retry-After) and nothing is kept;
 * admitted — to run now, to wait in the queue, or deferred — the client gets the response at
 * once, `queued` (or `in_progress`), kept in the shared store under its id, and polls
 * `GET /v1/responses/{id}` until it ends:
 * - `completed` or `incomplete`, as a response answered whole is kept;
 * - `failed`, with the error its client would have been answered with: it expired in the
 *   queue, its upstream failed, the gateway shut down before it ended;
 * - `cancelled` (`POST /v1/responses/{id}/cancel`, or deleted).
 * Its client going away changes nothing: that is what it is for, and a batch request deferred
 * for minutes holds no connection. Asked with `stream: true`, the answer is its stream of events
 * from `response.created` (queued or in progress) on, which its client may leave and take up
 * again, on any replica, from any event (response-stream.ts). Until it ends it holds its
 * tenant's pass at the door and counts as in flight, so a drain waits for it — but one still
 * queued there goes to a replica that serves (background-handover.ts). A cancel that reaches
 * another gateway replica marks it cancelled in the store; the replica running it reads the
 * mark every few seconds (`SWEEP_MS`, only where the store is shared) and stops it, and never
 * writes over it (background-runs.ts).
 */
import {
  OpenAiError,
  ResponseBuilder,
  answerId,
  type ResponsesRequest,
} from '../../openai/index.ts';
import type { LlmRequest } from '../../core/request/request.ts';
import type { TimerHandle } from '../../core/ports/timers.ts';
import type { Endpoint } from '../backend.ts';
import type { ClientHeaders } from './client-headers.ts';
import type { CompletionsDeps } from './completions.ts';
import { errorWhole, idHeaders, isWhole, named, whole, type Whole } from './answer.ts';
import { admitAndServe, type Parsed, type ServeContext, type Served } from './serve-admitted.ts';
import { loadHead } from './kept-records.ts';
import type { KeptResult } from '../state-metrics.ts';
import { eventsAnswer } from './stream-readers.ts';
import { ENDED } from './background-runs.ts';
import { orderText, type Adoption } from './background-handover.ts';
import { restated } from './client-headers.ts';

/**
 * The mark of a streamed background response's answer kept for replay: the id of the response
 * whose stream a retry under its Idempotency-Key follows (completions.ts `replayed`).
 */
export const FOLLOWS = 'x-goodput-follows';

export interface BackgroundContext extends Omit<
  ServeContext,
  'onQueued' | 'onDispatched' | 'createdS' | 'keepResponse' | 'builder' | 'events'
> {
  readonly responses: ResponsesRequest;
  /** Keeps a response under its id (kept-responses.ts `keeper`). */
  readonly keepResponse: (response: object) => Promise<KeptResult>;
  /** The request's body as it came: what another replica reads again, handed it over. */
  readonly bodyText: string;
  /** Taken from a replica that drained: how far it got there (background-handover.ts). */
  readonly adoption?: Adoption;
}

/**
 * Serves `req` in the background: the answer once admission has decided — its refusal, or the
 * response queued — and whether the request goes on apart from it (`detached`: it then ends
 * its pass and its stay in flight itself, when it ends).
 */
export async function serveInBackground(
  endpoint: Endpoint,
  parsed: Parsed,
  headers: ClientHeaders,
  req: LlmRequest,
  deps: CompletionsDeps,
  r: BackgroundContext,
): Promise<{ readonly served: Served; readonly detached: boolean }> {
  const runs = deps.background;
  const id = answerId('responses', req.id);
  const adoption = r.adoption;
  const createdS = adoption?.createdS ?? Math.floor(deps.epochMs() / 1000);
  const streamed = r.responses.stream === true;
  const builder = new ResponseBuilder(
    { id: req.id, createdAt: createdS, model: parsed.model, request: r.responses },
    streamed,
  );
  if (adoption !== undefined) builder.resumeAt(adoption.told);
  // The status of the response it ended with (completed, incomplete), once it has.
  let endedAs = 'failed';
  /**
   * Keeps `response` unless the run was cancelled, or its record ended (marked cancelled
   * elsewhere) or deleted; one save at a time, in order. False when it is not to be kept: the
   * run then ends as its record did, a deleted one as cancelled.
   */
  let saving = Promise.resolve(true);
  const save = (response: object): Promise<boolean> =>
    (saving = saving.then(async () => {
      const kept = runs.cancelled(id)
        ? undefined
        : await loadHead(deps, req.tenant, id).catch(() => null);
      const ended = kept === undefined || (kept !== null && ENDED.has(kept.response.status));
      if (ended) endedAs = kept?.response.status ?? 'cancelled';
      else await r.keepResponse(response);
      return !ended;
    }));
  // Where it stands while it runs, as its record says.
  let standing: 'queued' | 'in_progress' = 'queued';
  /**
   * The store keeps a record a TTL from its last save: one that waits or runs longer is saved
   * again, as it stands, every half TTL until it ends, so it is never lost before its end.
   */
  let alive: TimerHandle | undefined;
  const keepAlive = () => {
    const every = (deps.keptTtlMs ?? Infinity) / 2;
    if (!Number.isFinite(every)) return;
    alive = deps.timers.at(deps.nowMs() + every, () => {
      void save(builder.pending(standing)).then((kept) => kept && keepAlive());
    });
  };
  let admitted: (status: 'queued' | 'in_progress') => void = () => {};
  const decided = new Promise<'queued' | 'in_progress'>((ok) => (admitted = ok));
  // Whether the client has been told it is queued: a dispatch after is kept, not told.
  let told = false;
  const stop = new AbortController();
  const stream = runs.add(id, req.tenant, stop, streamed, adoption?.told);
  /** The order another replica runs it by, as it stands (background-handover.ts). */
  const order = () =>
    orderText({
      tenant: req.tenant,
      requestId: req.id,
      createdS,
      arrivalEpochMs: deps.epochMs() - (deps.nowMs() - req.arrivalMs),
      told: stream?.made ?? 0,
      headers: restated(headers),
      body: r.bodyText,
    });
  // Queued where the store is shared, its order is kept until it leaves the queue: should this
  // replica go, the one that finds it gone hands it over (kept-records.ts `loadSettled`).
  let orderKept = false;
  const dropOrder = () => {
    if (orderKept) void deps.store.dropOrder(req.tenant, id).catch(() => {});
    orderKept = false;
  };
  // A stream opens as admission decides, before any of the reply can come (taken over, it opened
  // where it was asked). Its last events go once the response is kept as it ended, so a client
  // that reads them finds it so.
  let opened = adoption !== undefined;
  let closing = '';
  const running = admitAndServe(
    endpoint,
    stop.signal,
    { ...parsed, stream: false },
    headers,
    req,
    deps,
    {
      ...r,
      outgoing: undefined,
      createdS,
      builder,
      events: (sse) => {
        if (builder.ended === undefined) stream?.emit(sse);
        else closing += sse;
      },
      onQueued: () => {
        if (!opened) stream?.emit(builder.opening('queued'));
        opened = true;
        runs.waiting(id, true);
        if (runs.shared) {
          orderKept = true;
          void deps.store.keepOrder(req.tenant, id, order()).catch(() => {});
        }
        admitted('queued');
      },
      onDispatched: () => {
        standing = 'in_progress';
        runs.waiting(id, false);
        dropOrder();
        stream?.emit(opened ? builder.started() : builder.opening('in_progress'));
        opened = true;
        if (told) void save(builder.pending('in_progress'));
        else admitted('in_progress');
      },
      keepResponse: async (response) => {
        if (!(await save(response))) return;
        endedAs = (response as { status?: string }).status ?? endedAs;
        stream?.emit(closing);
      },
    },
  );
  const first = await Promise.race([decided, running]);
  if (typeof first !== 'string') {
    // Refused, or ended before admission said more: answered as any request is.
    await stream?.end();
    runs.delete(id);
    return { served: first, detached: false };
  }
  told = true;
  const pending = builder.pending(first);
  if (adoption !== undefined) {
    // Kept as it runs here now, unless its record ended or went since it was taken.
    if (await save(pending)) {
      runs.kept(id);
      keepAlive();
    } else runs.stop(id);
    void running.then(
      (s) => finish(s),
      (e: unknown) => finish(undefined, e),
    );
    const answer = named(whole(200, {}, JSON.stringify(pending)), req.id);
    return { served: answered({ ...answer, detached: true }), detached: true };
  }
  if ((await r.keepResponse(pending)) !== 'ok') {
    // Not kept, it could never be polled: stopped before it runs, and the client told to retry.
    runs.cancel(req.tenant, id);
    void running.then(
      (s) => finish(s),
      (e: unknown) => finish(undefined, e),
    );
    const e = new OpenAiError(
      503,
      'the response store cannot keep a background response now; try again',
      null,
      'service_unavailable',
    );
    r.trace.answered(503, 'service_unavailable');
    const refused = named(errorWhole(e, { 'retry-after': '1' }), req.id);
    return { served: answered({ ...refused, detached: true }), detached: true };
  }
  runs.kept(id);
  keepAlive();
  r.trace.answered(200, undefined);
  void running.then(
    (s) => finish(s),
    (e: unknown) => finish(undefined, e),
  );
  if (stream !== undefined) {
    const head = { ...idHeaders(req.id), ...r.quota };
    // A retry under its Idempotency-Key follows it from its first event too, while it runs and
    // after, on any replica: it is a client that lost its stream before it learned the id.
    if (r.keep)
      await r.pass.answered({ status: 200, body: '', headers: { ...head, [FOLLOWS]: id } });
    // Its client follows it from its first event, and may leave: it runs on all the same.
    const { answer, out } = eventsAnswer(r.outgoing, head);
    void runs.follow(req.tenant, id, -1, out);
    return { served: { response: answer, streaming: false, usedTokens: 0 }, detached: true };
  }
  const answer = named(whole(200, {}, JSON.stringify(pending)), req.id);
  // A retry under its Idempotency-Key is answered as this was, while it runs and after.
  if (r.keep)
    await r.pass.answered({ status: 200, body: answer.body, headers: { ...answer.headers } });
  return { served: answered({ ...answer, detached: true }), detached: true };

  /** The run's end: kept as it ended, its pass given back, out of flight. */
  async function finish(served: Served | undefined, thrown?: unknown) {
    alive?.cancel();
    if (runs.handed(id)) return handOff();
    try {
      const answer = served?.response;
      if (answer === undefined || !isWhole(answer) || answer.status !== 200) {
        const cancelled = runs.cancelled(id);
        runs.delete(id);
        const status = cancelled ? 'cancelled' : 'failed';
        endedAs = status;
        const error = cancelled ? null : errorOf(answer, thrown);
        // A stream that fails ends with the event that says why; a cancelled one just ends.
        const failed = error === null || !opened ? '' : builder.fail(error.code, error.message);
        await saveEnded(builder.unanswered(status, error), cancelled);
        stream?.emit(failed);
      }
    } finally {
      dropOrder();
      await stream?.end();
      runs.ended(endedAs);
      runs.delete(id);
      await r.pass.end(undefined, served?.usedTokens ?? 0);
      r.ended();
    }
  }

  /**
   * Stopped while queued, for a replica serving to run it (background-runs.ts `handOver`): its
   * events logged, its order put where one takes it, then the order it kept while queued let go
   * (a crash between leaves both: its taker keeps the record its own). The store refusing, the
   * response stays queued here, its order kept as it was: once this replica has gone, the
   * replica that finds it gone hands it over (kept-records.ts `reclaimed`).
   */
  async function handOff() {
    try {
      await stream?.end(true);
      try {
        await deps.store.handOver(order());
        deps.metrics.state.handovers.inc({ op: 'handed' });
        dropOrder();
      } catch {
        deps.metrics.state.handovers.inc({ op: 'not_handed' });
      }
    } finally {
      runs.delete(id);
      await r.pass.end(undefined, 0);
      r.ended();
    }
  }

  /** A cancelled response is kept as such whatever its record says; a failed one as `save`. */
  async function saveEnded(response: object, cancelled: boolean): Promise<void> {
    if (!cancelled) {
      await save(response);
      return;
    }
    const kept = await loadHead(deps, req.tenant, id).catch(() => null);
    if (kept !== undefined) await r.keepResponse(response);
  }
}

/** The error a failed background response records: its answer's, as a client would have had it. */
export function errorOf(
  answer: Served['response'] | undefined,
  thrown: unknown,
): { code: string; message: string } {
  if (answer !== undefined && isWhole(answer)) {
    try {
      const { error } = JSON.parse(answer.body) as {
        error?: { code?: unknown; message?: unknown };
      };
      const code = typeof error?.code === 'string' ? error.code : `http_${answer.status}`;
      return { code, message: String(error?.message ?? `HTTP ${answer.status}`) };
    } catch {
      return { code: `http_${answer.status}`, message: `HTTP ${answer.status}` };
    }
  }
  return { code: 'internal_error', message: (thrown as Error | undefined)?.message ?? 'unknown' };
}

/** The answer of a request that goes on apart from it: its trace and pass are its own. */
function answered(response: Whole): Served {
  return { response, streaming: false, usedTokens: 0 };
}
