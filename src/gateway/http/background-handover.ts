/**
 * Background responses handed over at a drain. A replica that drains stops taking requests, and
 * what it runs may go on for its drain time; a background response still queued there — a
 * batch request deferred for minutes, say — would wait all that time, then fail
 * `shutting_down`. So when another replica serves (background-runs.ts `handOver`), the
 * draining one stops each such run, and keeps in the shared store its order: the request as
 * it came (body, the client's headers Goodput reads, its tenant), its response's id and
 * creation time, when it arrived, and how many of its stream's events it told. A replica
 * serving takes orders every `SWEEP_MS`, each to one replica alone, and runs each here as the
 * same request (`adopt`): read again and admitted again as any request is, its wait counted
 * from when it first arrived, kept under the same id, its stream numbered on from where it
 * stopped. Its clients poll, or follow its stream, as before, on any replica. Refused here (a
 * quota spent, no room before its deadline), it is kept failed with the refusal, as its
 * client would have been answered had it come now. One cancelled, deleted or taken for lost
 * before it is taken is dropped. A replica killed or crashed hands nothing over, but the order
 * of each response queued is kept while it waits (background.ts): the replica that finds it
 * gone hands it over (kept-records.ts `reclaimed`). Counted in
 * `goodput_background_handovers_total`.
 */
import type { Ms } from '../../core/request/units.ts';
import { answerId } from '../../openai/index.ts';
import { isWhole } from './answer.ts';
import { errorOf } from './background.ts';
import { handleCompletion, type CompletionsDeps } from './completions.ts';
import type { Inbound } from './inbound.ts';
import { keepFailed, loadHead } from './kept-records.ts';
import { failedEvent } from './stream-readers.ts';

/** What a replica that takes over a background response needs of how it went before. */
export interface Adoption {
  readonly tenant: string;
  /** Its response's `created_at`, Unix seconds. */
  readonly createdS: number;
  /** The events its stream told before: the next one's sequence number. */
  readonly told: number;
}

/** A background response handed over: the request to run again, and how far it got. */
export interface Order extends Adoption {
  /** The request's id, its response's `resp_…`. */
  readonly requestId: string;
  /** When it arrived, Unix ms. */
  readonly arrivalEpochMs: number;
  /** The client's headers Goodput reads, told again (client-headers.ts `restated`). */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** `order` as the store keeps it. */
export function orderText(order: Order): string {
  return JSON.stringify(order);
}

/** The order `text` holds; undefined when it is none (written by another version, say). */
export function readOrder(text: string): Order | undefined {
  let o: Partial<Record<keyof Order, unknown>> | null;
  try {
    o = JSON.parse(text) as typeof o;
  } catch {
    return undefined;
  }
  if (typeof o !== 'object' || o === null) return undefined;
  const strings = [o.tenant, o.requestId, o.body].every((v) => typeof v === 'string');
  const numbers = [o.createdS, o.arrivalEpochMs, o.told].every(Number.isFinite);
  const headers =
    typeof o.headers === 'object' &&
    o.headers !== null &&
    Object.values(o.headers).every((v) => typeof v === 'string');
  return strings && numbers && headers ? (o as Order) : undefined;
}

/** A request handed over, read as one that came: its headers and body, and no client. */
class OrderInbound implements Inbound {
  readonly #order: Order;
  /** Never aborted: its clients read it from the store. */
  readonly signal = new AbortController().signal;
  readonly gone = false;
  readonly queuedSinceMs: Ms;

  constructor(order: Order, nowMs: Ms, epochMs: number) {
    this.#order = order;
    // Its wait began where it first arrived.
    this.queuedSinceMs = nowMs - Math.max(0, epochMs - order.arrivalEpochMs);
  }

  /** Read apart from its inbound, as a real request's header is. */
  readonly header = (name: string): string | null => {
    const { headers } = this.#order;
    return Object.hasOwn(headers, name) ? headers[name] : null;
  };

  body(): Promise<string> {
    return Promise.resolve(this.#order.body);
  }

  discard(): void {}
}

/** Runs here the background response `text` orders, handed over by a replica that drained. */
export async function adopt(text: string, deps: CompletionsDeps): Promise<void> {
  const count = (op: string) => deps.metrics.state.handovers.inc({ op });
  const order = readOrder(text);
  if (order === undefined) return count('dropped');
  // Taken as this replica began to drain: it goes back, for another.
  if (deps.background.draining) return deps.store.handOver(text);
  const { tenant } = order;
  const id = answerId('responses', order.requestId);
  let head: Awaited<ReturnType<typeof loadHead>>;
  try {
    head = await loadHead(deps, tenant, id);
  } catch {
    // The store cannot say now: it goes back, to be read again at a later sweep.
    return deps.store.handOver(text);
  }
  // Cancelled, deleted or taken for lost since: nothing to run.
  if (head?.response.status !== 'queued') return count('dropped');
  // This replica began to drain as it read the record: it goes back, refused by none.
  if (deps.background.draining) return deps.store.handOver(text);
  const inbound = new OrderInbound(order, deps.nowMs(), deps.epochMs());
  const answer = await handleCompletion('responses', inbound, deps, undefined, {
    requestId: order.requestId,
    adoption: order,
  });
  if (!isWhole(answer) || answer.detached === true) return count('adopted');
  // Refused as this replica began to drain: it goes back too.
  if (deps.background.draining) return deps.store.handOver(text);
  // Refused here: it ends as its client would have been answered, had it come now.
  count('refused');
  deps.background.ended('failed');
  const failed = await keepFailed(deps, tenant, id, errorOf(answer, undefined));
  if (failed !== undefined && order.told > 0)
    await deps.store.appendEvents(tenant, id, [failedEvent(order.told, failed.response)]);
}
