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
 * `response.completed` finds it on any replica. The record's format is `KeptRecord`.
 */
import {
  answerId,
  asChatRequest,
  describeValue,
  invalidRequest,
  conversationItems,
  MAX_RESPONSE_ID_CHARS,
  holdsImages,
  statelessOnly,
  estimateChatPrompt,
  truncationStart,
  type InputItem,
} from '../../openai/index.ts';
import type { CompletionsDeps } from './completions.ts';
import { plannedTokens } from './prompt-view.ts';
import type { KeptResult, StateMetrics } from '../state-metrics.ts';
import { isSharedStoreUnavailable, type SharedStore } from '../shared/shared-store.ts';
import type { ReadRequest } from './read-request.ts';
import type { ImageTokens } from '../../openai/image-size.ts';

/** The statuses of a background response that runs. */
export const RUNNING: ReadonlySet<string> = new Set(['queued', 'in_progress']);

const statusOf = (response: object) => (response as { status?: string }).status ?? '';

/** A kept response, as the store holds its JSON text. */
export interface KeptRecord {
  /** The response as its client got it last: its `status`, `output`, `usage`, … */
  readonly response: { readonly id: string; readonly status: string; readonly output: InputItem[] };
  /** The conversation it answered, as items with ids: the earlier turns, then its own input. */
  readonly input: InputItem[];
  /** The conversation's session, which its next turns keep. */
  readonly session: string;
  /** A background response asked to stream: its events are logged, to be followed again. */
  readonly streamed?: true;
  /** The replica running it, while a background response runs (`loadSettled`). */
  readonly runner?: string;
}

/** A kept record but its conversation: what a poll, a cancel's check or a sweep reads. */
export type KeptHead = Omit<KeptRecord, 'input'>;

export interface KeepingDeps {
  readonly store: SharedStore;
  /** Whether responses are kept at all (a gateway may be told to keep none). */
  readonly keepResponses: boolean;
  readonly metrics: { readonly state: StateMetrics };
  /** The prompt tokens an image takes in the served model (image-size.ts); unknown: refused. */
  readonly imageTokens?: ImageTokens;
  /** This gateway replica's id, which the records of the background responses it runs name. */
  readonly replica?: string;
}

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

/** How long a replica's beat holds: five sweeps, so a loop behind for seconds is not gone. */
export const LOST_AFTER_MS = 10_000;

const LOST = {
  code: 'runner_lost',
  message:
    'the gateway replica running this response stopped before it ended (killed or crashed); send it again',
};

/**
 * The response kept under `id` for `tenant`, settled first when it is a background response
 * whose replica is gone. A replica killed, crashed or cut off with its machine leaves what it
 * ran `queued` or `in_progress`, and its clients would poll it, or follow its stream, for ever.
 * So the record of a background response that runs names its runner (`KeptRecord.runner`), and
 * a replica running any says in the store that it is alive (`beat`) every `SWEEP_MS`
 * (background.ts), for `LOST_AFTER_MS`. Read where its runner is not alive — by a poll, a
 * stream's reader, a cancel, the next turn — it is kept `failed` (`runner_lost`) and answered
 * so, counted in `goodput_background_responses_lost_total`. A drain is no loss: a replica
 * that drains hands what is still queued to another (background-handover.ts), and fails what
 * it cannot finish itself.
 */
export async function loadSettled(
  deps: KeepingDeps,
  tenant: string,
  id: string,
): Promise<KeptRecord | undefined> {
  return settled(deps, tenant, id, await loadKept(deps, tenant, id));
}

/** `loadSettled`, its head alone: what a poll needs, without its conversation read. */
export async function loadSettledHead(
  deps: KeepingDeps,
  tenant: string,
  id: string,
): Promise<KeptHead | undefined> {
  return settled(deps, tenant, id, await loadHead(deps, tenant, id));
}

async function settled<K extends KeptHead>(
  deps: KeepingDeps,
  tenant: string,
  id: string,
  kept: K | undefined,
): Promise<K | KeptRecord | undefined> {
  const runner = kept?.runner;
  if (kept === undefined || runner === undefined || runner === deps.replica) return kept;
  if (!RUNNING.has(kept.response.status) || (await deps.store.alive(runner))) return kept;
  const lost = await keepFailed(deps, tenant, id, LOST);
  if (lost !== undefined) deps.metrics.state.backgroundLost.inc();
  return lost;
}

/**
 * The response kept under `id` kept again `failed` with `error`, its conversation with it and no
 * runner named; undefined when none is kept.
 */
export async function keepFailed(
  deps: KeepingDeps,
  tenant: string,
  id: string,
  error: { readonly code: string; readonly message: string },
): Promise<KeptRecord | undefined> {
  const whole = await loadKept(deps, tenant, id);
  if (whole === undefined) return undefined;
  const { runner: _, ...record } = whole;
  const response = { ...whole.response, status: 'failed', error };
  const failed: KeptRecord = { ...record, response };
  await saveKept(deps, tenant, id, failed);
  return failed;
}

/**
 * Keeps `record` again under `id` for `tenant` (counted as a save, as `keeper`'s are); false
 * when it is too large to keep. Rejects with `SharedStoreUnavailable` when the store cannot.
 */
export function saveKept(
  deps: KeepingDeps,
  tenant: string,
  id: string,
  record: KeptRecord,
): Promise<boolean> {
  const saved = deps.store.saveResponse(tenant, id, keptText(record));
  return counted(deps, 'save', saved, (s) => s, 'too_large');
}

/**
 * A record as the store keeps it: its head first — everything but the conversation, its length
 * told (`head_chars`) — so that a poll reads the head alone (`loadHead`), however long the
 * conversation. The whole reads as JSON, the told length an extra field.
 */
export function keptText(record: KeptRecord): string {
  const { input, ...rest } = record;
  const head = JSON.stringify(rest);
  return `{"head_chars":${head.length},${head.slice(1, -1)},"input":${JSON.stringify(input)}}`;
}

const HEAD_CHARS = /^\{"head_chars":(\d+),/;

/** What a poll reads first: most heads whole (a response still running, or a short one). */
const FIRST_READ_CHARS = 4_096;

/** The head `text` begins with, whole in it; undefined when it tells none (a record kept before). */
function headIn(text: string): { readonly head?: KeptHead; readonly chars?: number } {
  const told = HEAD_CHARS.exec(text);
  if (told === null) return {};
  const from = told[0].length;
  const chars = from + Number(told[1]) - 2;
  if (text.length < chars) return { chars };
  return { head: JSON.parse(`{${text.slice(from, chars)}}`) as KeptHead, chars };
}

/**
 * The response kept under `id` for `tenant`; undefined when there is none. Rejects with
 * `SharedStoreUnavailable` when the store cannot say. An id longer than any kept is none
 * without asking the store, whose key it would be.
 */
export async function loadKept(
  deps: KeepingDeps,
  tenant: string,
  id: string,
): Promise<KeptRecord | undefined> {
  const text = await loadText(deps, tenant, id);
  if (text === undefined) return undefined;
  // The head's told length is the text's, not the record's: kept again, it is told anew.
  const { head_chars: _, ...record } = JSON.parse(text) as KeptRecord & { head_chars?: number };
  return record;
}

/**
 * `loadKept`'s head alone: the response, its session and marks, not its conversation — read
 * from the record's beginning (one read of `FIRST_READ_CHARS`, a second when the head is
 * longer), so neither the store nor the gateway handles the conversation.
 */
export async function loadHead(
  deps: KeepingDeps,
  tenant: string,
  id: string,
): Promise<KeptHead | undefined> {
  const read = (chars: number) =>
    counted(
      deps,
      'load',
      keptId(id) ? deps.store.loadResponsePrefix(tenant, id, chars) : Promise.resolve(undefined),
      (t) => t !== undefined,
    );
  const first = await read(FIRST_READ_CHARS);
  if (first === undefined) return undefined;
  const { head, chars } = headIn(first);
  if (head !== undefined) return head;
  if (chars === undefined) return loadKept(deps, tenant, id);
  const again = await read(chars);
  return again === undefined ? undefined : headIn(again).head;
}

function loadText(deps: KeepingDeps, tenant: string, id: string): Promise<string | undefined> {
  return counted(
    deps,
    'load',
    keptId(id) ? deps.store.loadResponse(tenant, id) : Promise.resolve(undefined),
    (t) => t !== undefined,
  );
}

/** Forgets the response kept under `id` for `tenant`; false when there was none. */
export function deleteKept(deps: KeepingDeps, tenant: string, id: string): Promise<boolean> {
  const deleted = keptId(id) ? deps.store.deleteResponse(tenant, id) : Promise.resolve(false);
  return counted(deps, 'delete', deleted, (d) => d);
}

const keptId = (id: string): boolean => id.length <= MAX_RESPONSE_ID_CHARS;

/**
 * `op`'s answer, counted by result: `ok` when `found`, else `missed` (`none`); `unavailable`
 * (rejected).
 */
async function counted<T>(
  deps: KeepingDeps,
  op: 'load' | 'delete' | 'save',
  answer: Promise<T>,
  found: (got: T) => boolean,
  missed: 'none' | 'too_large' = 'none',
): Promise<T> {
  try {
    const got = await answer;
    deps.metrics.state.kept.inc({ op, result: found(got) ? 'ok' : missed });
    return got;
  } catch (e) {
    if (isSharedStoreUnavailable(e)) deps.metrics.state.kept.inc({ op, result: 'unavailable' });
    throw e;
  }
}
