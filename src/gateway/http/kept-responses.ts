/**
 * The Responses API's stored responses, kept as OpenAI keeps them (`store`, on unless a request
 * says false): a response that ran to its end (completed, or incomplete at its output limit)
 * or failed mid-stream is kept in the shared store under its tenant, with the conversation it
 * answered, for the store's response TTL. The store is memory, or Redis shared by every gateway
 * replica. The next turn names it (`previous_response_id`) and sends only what is new:
 * - the gateway puts the earlier turns and the named response's output before it, and the
 *   request goes upstream as the whole chat it is, its prompt sized as such by admission;
 * - the conversation keeps one session from its second turn on (its first turn's, or that
 *   turn's response id), so routing keeps it near its prefix cache. A first turn is no session
 *   of its own: most kept requests are never continued, and a tenant's session quota counts
 *   conversations, not requests (prefix-aware routing finds the first turn's cache);
 * - a turn's instructions and tools are its own, as OpenAI's are: they are not carried on.
 * A response is kept before its last event goes out, so a client that sends the next turn at
 * `response.completed` finds it on any replica. The record and how it is read: kept-records.ts.
 */
import {
  answerId,
  asChatRequest,
  describeValue,
  invalidRequest,
  conversationItems,
  holdsImages,
  statelessOnly,
  estimateChatPrompt,
  truncationStart,
  type InputItem,
} from '../../openai/index.ts';
import type { CompletionsDeps } from './completions.ts';
import { plannedTokens } from './prompt-view.ts';
import type { KeptResult } from '../state-metrics.ts';
import { isSharedStoreUnavailable } from '../shared/shared-store.ts';
import type { ReadRequest } from './read-request.ts';
import {
  RUNNING,
  keptText,
  loadSettled,
  type KeepingDeps,
  type KeptRecord,
} from './kept-records.ts';

const statusOf = (response: object) => (response as { status?: string }).status ?? '';

/**
 * The request `read` is, after the stored response it follows: its earlier turns and that
 * response's output before its own input, in its conversation's session.
 * Refused when it names none its tenant has (400 `previous_response_not_found`, as OpenAI words
 * it) or one that failed; `refusal` when the store cannot say now.
 */
export async function continued(
  read: ReadRequest,
  tenant: string,
  deps: KeepingDeps,
): Promise<ReadRequest> {
  const asked = read.responses;
  if (asked === undefined) return read;
  // Nothing kept, nothing to follow or to poll.
  if (!deps.keepResponses) statelessOnly(asked, 'this gateway (--responses-ttl 0)');
  const previous = asked.previous_response_id;
  if (previous == null) return read;
  let got: KeptRecord | undefined;
  try {
    got = await loadSettled(deps, tenant, previous);
  } catch (e) {
    if (!isSharedStoreUnavailable(e)) throw e;
    const retryAfterMs = e.retryAfterMs;
    return {
      ...read,
      refusal: { outcome: 'reject', status: 503, reason: 'service_capacity', retryAfterMs },
    };
  }
  if (got === undefined) {
    throw invalidRequest(
      `previous_response_id: no response ${describeValue(previous)} is stored for this tenant (never kept, expired or deleted); send the whole conversation in input`,
      'previous_response_id',
      'previous_response_not_found',
    );
  }
  const status = got.response.status;
  if (status === 'failed' || status === 'cancelled') {
    throw invalidRequest(
      `previous_response_id: response ${describeValue(previous)} ${status === 'failed' ? 'failed' : 'was cancelled'}; continue from the turn before it`,
      'previous_response_id',
      'invalid_value',
    );
  }
  if (status === 'queued' || status === 'in_progress') {
    throw invalidRequest(
      `previous_response_id: response ${describeValue(previous)} is still ${status === 'queued' ? 'queued' : 'in progress'} (background); continue from it once it has completed`,
      'previous_response_id',
      'invalid_value',
    );
  }
  const history = [...got.input, ...got.response.output];
  // Kept by a gateway that could size its images, read by one that cannot (started without).
  if (deps.imageTokens === undefined && holdsImages(history)) {
    throw invalidRequest(
      `previous_response_id: the conversation of ${describeValue(previous)} holds an image, which this gateway cannot size: it was not started with --image-tokens`,
      'previous_response_id',
      'invalid_value',
    );
  }
  const parsed = asChatRequest({
    ...asked,
    input: [...history, ...conversationItems(asked.input, '')],
  });
  return { ...read, parsed, history, cacheKey: read.cacheKey ?? got.session };
}

/**
 * The request `read` is, held to the model's context when it asks `truncation: "auto"`
 * (openai/truncation.ts): its conversation — the turns it follows, then its own input — from the
 * earliest turn it fits from, as this gateway plans a prompt (prompt-view.ts). What it keeps
 * is what its next turn follows, so a conversation truncated goes on in bounded room.
 */
export function truncated(
  read: ReadRequest,
  deps: Pick<CompletionsDeps, 'gateway' | 'imageTokens' | 'promptScale' | 'metrics'>,
): ReadRequest {
  const asked = read.responses;
  if (asked?.truncation !== 'auto') return read;
  const context = deps.gateway.pipeline.spec.maxModelLen;
  const history = read.history ?? [];
  const items = [...history, ...conversationItems(asked.input, '')];
  // Each try planned as admission plans a prompt, from its estimate alone.
  const from = truncationStart(asked, items, context, ({ messages, tools }) =>
    plannedTokens(
      estimateChatPrompt({ messages, tools, imageTokens: deps.imageTokens }),
      deps.promptScale,
    ),
  );
  if (from === 0) return read;
  deps.metrics.state.truncated.inc();
  deps.metrics.state.truncatedItems.inc(from);
  // Cut in its own input, the rest of that is its input, with the ids its answer gives them.
  const own =
    from <= history.length
      ? asked.input
      : (asked.input as InputItem[]).slice(from - history.length);
  return {
    ...read,
    parsed: asChatRequest({ ...asked, input: items.slice(from) }),
    history: history.slice(from),
    responses: { ...asked, input: own },
  };
}

/**
 * What keeps the response of the Responses request `read`, the gateway's request `req`, once it
 * has ended; undefined when it is not to be kept. It never fails the request: a response the
 * store cannot keep is counted (`goodput_kept_responses_total{op="save"}`), and its next turn
 * is refused by name.
 */
export function keeper(
  read: ReadRequest,
  req: { readonly id: string; readonly tenant: string; readonly session?: string },
  deps: KeepingDeps,
): ((response: object) => Promise<KeptResult>) | undefined {
  const asked = read.responses;
  if (asked === undefined || asked.store === false || !deps.keepResponses) return undefined;
  const { id, tenant } = req;
  const runner = deps.replica === undefined ? {} : { runner: deps.replica };
  return async (response) => {
    const record: KeptRecord = {
      response: response as KeptRecord['response'],
      input: [...(read.history ?? []), ...conversationItems(asked.input, id)],
      session: req.session ?? answerId('responses', id),
      ...(asked.background === true && asked.stream === true ? { streamed: true } : {}),
      ...(asked.background === true && RUNNING.has(statusOf(response)) ? runner : {}),
    };
    let result: KeptResult;
    try {
      const text = keptText(record);
      result = (await deps.store.saveResponse(tenant, record.response.id, text))
        ? 'ok'
        : 'too_large';
    } catch {
      // The shared store down (and failing closed): the answer goes out all the same.
      result = 'unavailable';
    }
    deps.metrics.state.kept.inc({ op: 'save', result });
    return result;
  };
}
