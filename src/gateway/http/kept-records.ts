/**
 * The records of the Responses API's kept responses in the shared store (kept-responses.ts
 * says what is kept, and when): each kept head first, so a poll reads the head alone; each
 * read, save and delete counted in `goodput_kept_responses_total`. And the records of
 * background responses whose replica is gone, settled as they are read (`loadSettled`).
 */
import { MAX_RESPONSE_ID_CHARS, type InputItem } from '../../openai/index.ts';
import type { StateMetrics } from '../state-metrics.ts';
import { isSharedStoreUnavailable, type SharedStore } from '../shared/shared-store.ts';
import type { ImageTokens } from '../../openai/image-size.ts';

/** The statuses of a background response that runs. */
export const RUNNING: ReadonlySet<string> = new Set(['queued', 'in_progress']);

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

/** How long a replica's beat holds: five sweeps, so a loop behind for seconds is not gone. */
export const LOST_AFTER_MS = 10_000;

/** How long one reader holds the settling of a record (should it die midway, another may). */
const SETTLE_MS = 5_000;

/**
 * How long a response handed over by the replica that found its runner gone waits for a replica
 * to take it: the order is taken within a sweep (`SWEEP_MS`) where one serves. Past it — its
 * taker killed as it took it, say — the response is taken for lost, as its runner was.
 */
const TAKE_WITHIN_MS = 30_000;

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
 * so, counted in `goodput_background_responses_lost_total` — unless it was still queued: then
 * its order, kept as it queued, is handed to the replicas serving (`reclaimed`), and it is given
 * `TAKE_WITHIN_MS` to be taken. A drain is no loss: a replica that drains hands what is still
 * queued to another (background-handover.ts) — the record of one handed over still names it,
 * with no order kept, and waits as long to be taken — and fails what it cannot finish itself.
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
  if (kept === undefined || runner === deps.replica || !RUNNING.has(kept.response.status))
    return kept;
  const queued = kept.response.status === 'queued';
  if (runner === undefined) {
    // Handed over as its runner was found gone: lost once the one who found it holds it no more.
    if (!queued || !(await deps.store.settling(tenant, id, SETTLE_MS))) return kept;
  } else {
    if (await deps.store.alive(runner)) return kept;
    // One reader settles it; the others answer it as it stands, and find it settled next time.
    // One queued is handed over, and held as such until a replica has had time to take it.
    if (!(await deps.store.settling(tenant, id, queued ? TAKE_WITHIN_MS : SETTLE_MS))) return kept;
    if (queued) {
      // With no order kept, its runner drained and handed it over, most likely: it waits for a
      // replica to take it as long.
      const waiting =
        (await reclaimed(deps, tenant, id)) ?? (await unnamed(deps, tenant, id, runner));
      if (waiting !== undefined) return waiting;
    }
  }
  const lost = await keepFailed(deps, tenant, id, LOST);
  if (lost !== undefined) deps.metrics.state.backgroundLost.inc();
  return lost;
}

/**
 * A response still queued on a replica gone, handed to the replicas serving by its order (kept
 * as it queued, background.ts), as a drain hands one over: kept queued with no runner named
 * until a replica takes it (background-handover.ts), which nobody takes for lost for
 * `TAKE_WITHIN_MS`. Undefined when its order is not there to take (taken by another reader, or
 * never kept) or cannot go.
 */
async function reclaimed(
  deps: KeepingDeps,
  tenant: string,
  id: string,
): Promise<KeptRecord | undefined> {
  const order = await deps.store.takeOrder(tenant, id);
  const waiting = order === undefined ? undefined : await unnamed(deps, tenant, id);
  if (order === undefined || waiting === undefined) return undefined;
  try {
    await deps.store.handOver(order);
  } catch {
    return undefined;
  }
  deps.metrics.state.handovers.inc({ op: 'reclaimed' });
  return waiting;
}

/**
 * The response kept under `id`, still queued, kept again with no runner named: waiting for a
 * replica to take it. Undefined when it is not kept; as it stands when it is no longer queued on
 * `runner` (where one is named): taken meanwhile by a replica that adopted it, say.
 */
async function unnamed(
  deps: KeepingDeps,
  tenant: string,
  id: string,
  runner?: string,
): Promise<KeptRecord | undefined> {
  const whole = await loadKept(deps, tenant, id);
  if (whole === undefined) return undefined;
  const { runner: was, ...waiting } = whole;
  if (runner !== undefined && (was !== runner || whole.response.status !== 'queued')) return whole;
  await saveKept(deps, tenant, id, waiting);
  return waiting;
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
