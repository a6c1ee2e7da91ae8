/**
 * A request retried under its Idempotency-Key (shared/door.ts): what binds the key to the
 * request, and the answer its retry gets — the first one's, kept in the shared store.
 */
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { SloClassName } from '../../core/request/slo-classes.ts';
import type { Endpoint } from '../backend.ts';
import type { StoredResponse } from '../shared/shared-store.ts';
import type { Answer } from './answer.ts';
import { withoutQuota } from './quota-headers.ts';
import { FOLLOWS } from './background.ts';
import type { BackgroundRuns } from './background-runs.ts';
import { eventsAnswer } from './stream-readers.ts';

/**
 * What binds an Idempotency-Key: the endpoint, the class and the body's bytes (its `stream`
 * included, so an answer is only ever replayed in the mode it was asked in). A client's retry
 * sends the same bytes; anything else is another request.
 */
export function fingerprint(kind: Endpoint, cls: SloClassName, bodyText: string): string {
  return createHash('sha256').update(`${kind}\n${cls}\n`).update(bodyText).digest('base64url');
}

/**
 * The stored answer as it was, the original request's id included: its record is the one. A
 * streamed background response's is its stream, followed from its first event, as it runs and
 * after, from wherever it runs.
 */
export function replayed(
  r: StoredResponse,
  tenant: string,
  background: BackgroundRuns,
  outgoing: ServerResponse | undefined,
): Answer {
  const { [FOLLOWS]: follows, ...kept } = r.headers;
  // A replay takes nothing of its tenant's quota, which the answer it repeats told as it stood.
  const headers = { ...withoutQuota(kept), 'x-goodput-replayed': 'true' };
  if (follows !== undefined) {
    const { answer, out } = eventsAnswer(outgoing, headers);
    void background.follow(tenant, follows, -1, out);
    return answer;
  }
  return { kind: 'whole', status: r.status, headers, body: r.body };
}
