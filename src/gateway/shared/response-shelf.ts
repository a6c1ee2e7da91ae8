/**
 * The Responses API's kept responses in one process: texts by tenant and id, and the logs of
 * their streams' events, each for at most `ttlMs` (a log from its last addition), and at most
 * `capacityBytes` of them in all. To make room, the tenant holding the most bytes forgets its
 * oldest first: one tenant's flood of large responses pushes out its own, not another's. A Map
 * keeps each kind in the order it was kept (a log moves to its end as it grows), so a tenant's
 * oldest is the first entry of one of its own two. Time comes from the caller (`nowMs`), as in
 * `BoundedMap`.
 */
import type { Ms } from '../../core/request/units.ts';
import { RESPONSE_MAX_BYTES } from './shared-store.ts';

interface Kept {
  readonly text: string;
  readonly atMs: Ms;
}

interface Log {
  readonly events: string[];
  atMs: Ms;
  bytes: number;
}

/** What one tenant holds, in the order it was kept, and its bytes. */
interface Holding {
  readonly kept: Map<string, Kept>;
  readonly logs: Map<string, Log>;
  bytes: number;
}

export class ResponseShelf {
  readonly #kept = new Map<string, Kept>();
  readonly #logs = new Map<string, Log>();
  /** By tenant (its encoded name, as `keyOf` begins). */
  readonly #holdings = new Map<string, Holding>();
  readonly #ttlMs: Ms;
  readonly #capacityBytes: number;
  /** Bytes of the texts kept, counted as two per UTF-16 code unit, as the heap holds them. */
  #bytes = 0;

  constructor(ttlMs: Ms, capacityBytes: number) {
    this.#ttlMs = ttlMs;
    this.#capacityBytes = capacityBytes;
  }

  /** False when the text is larger than a kept response may be, or than the whole shelf. */
  save(tenant: string, id: string, text: string, nowMs: Ms): boolean {
    const size = sizeOf(text);
    if (size > this.#capacityBytes || Buffer.byteLength(text) > RESPONSE_MAX_BYTES) return false;
    const key = keyOf(tenant, id);
    const kept = this.#kept.get(key);
    if (kept !== undefined) this.#forget(key, kept);
    this.#makeRoom(size);
    const entry = { text, atMs: nowMs };
    this.#kept.set(key, entry);
    const holding = this.#holding(key);
    holding.kept.set(key, entry);
    this.#count(holding, size);
    return true;
  }

  /**
   * Adds `events` to `id`'s log: the index of the first, or -1 when none is added (they would
   * not fit the shelf).
   */
  append(tenant: string, id: string, events: readonly string[], nowMs: Ms): number {
    const size = events.reduce((n, e) => n + sizeOf(e), 0);
    const key = keyOf(tenant, id);
    const log = this.#logs.get(key) ?? { events: [], atMs: nowMs, bytes: 0 };
    if (log.bytes + size > this.#capacityBytes) return -1;
    const from = log.events.length;
    const holding = this.#holding(key);
    // Out of the order while room is made, so it is not the one forgotten.
    this.#logs.delete(key);
    holding.logs.delete(key);
    this.#makeRoom(size);
    for (const e of events) log.events.push(e);
    log.atMs = nowMs;
    log.bytes += size;
    this.#count(holding, size);
    this.#logs.set(key, log);
    holding.logs.set(key, log);
    return from;
  }

  /** Up to `max` events of `id`'s log from index `from` (negative: from its end). */
  events(tenant: string, id: string, from: number, max: number, nowMs: Ms): readonly string[] {
    const key = keyOf(tenant, id);
    const log = this.#logs.get(key);
    if (log === undefined) return [];
    if (nowMs - log.atMs > this.#ttlMs) {
      this.#drop(key, log);
      return [];
    }
    const start = from < 0 ? Math.max(0, log.events.length + from) : from;
    return log.events.slice(start, start + max);
  }

  load(tenant: string, id: string, nowMs: Ms): string | undefined {
    const key = keyOf(tenant, id);
    const kept = this.#kept.get(key);
    if (kept === undefined) return undefined;
    if (nowMs - kept.atMs > this.#ttlMs) {
      this.#forget(key, kept);
      return undefined;
    }
    return kept.text;
  }

  delete(tenant: string, id: string, nowMs?: Ms): boolean {
    const key = keyOf(tenant, id);
    const log = this.#logs.get(key);
    if (log !== undefined) this.#drop(key, log);
    const kept = this.#kept.get(key);
    if (kept === undefined) return false;
    this.#forget(key, kept);
    return nowMs === undefined || nowMs - kept.atMs <= this.#ttlMs;
  }

  /** The texts kept and not yet past their TTL, oldest first, with their tenant and id. */
  *kept(
    nowMs: Ms,
  ): Generator<{ readonly tenant: string; readonly id: string; readonly text: string }> {
    for (const [key, kept] of this.#kept) {
      if (nowMs - kept.atMs > this.#ttlMs) continue;
      const space = key.indexOf(' ');
      yield {
        tenant: decodeURIComponent(key.slice(0, space)),
        id: key.slice(space + 1),
        text: kept.text,
      };
    }
  }

  /** Bytes held now. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Responses held now (some maybe past their TTL, not yet looked up). */
  get size(): number {
    return this.#kept.size;
  }

  #forget(key: string, kept: Kept): void {
    this.#kept.delete(key);
    const holding = this.#holding(key);
    holding.kept.delete(key);
    this.#count(holding, -sizeOf(kept.text));
  }

  #drop(key: string, log: Log): void {
    this.#logs.delete(key);
    const holding = this.#holding(key);
    holding.logs.delete(key);
    this.#count(holding, -log.bytes);
  }

  /** The holding of the tenant `key` (from `keyOf`) belongs to. */
  #holding(key: string): Holding {
    const tenant = key.slice(0, key.indexOf(' '));
    let holding = this.#holdings.get(tenant);
    if (holding === undefined) {
      holding = { kept: new Map(), logs: new Map(), bytes: 0 };
      this.#holdings.set(tenant, holding);
    }
    return holding;
  }

  #count(holding: Holding, bytes: number): void {
    holding.bytes += bytes;
    this.#bytes += bytes;
  }

  /** Forgets the oldest of the heaviest tenant's responses and logs until `size` more bytes fit. */
  #makeRoom(size: number): void {
    while (this.#bytes + size > this.#capacityBytes) {
      let heaviest: Holding | undefined;
      for (const h of this.#holdings.values()) {
        const any = h.kept.size > 0 || h.logs.size > 0;
        if (any && (heaviest === undefined || h.bytes > heaviest.bytes)) heaviest = h;
      }
      if (heaviest === undefined) return;
      const kept = heaviest.kept.entries().next().value;
      const log = heaviest.logs.entries().next().value;
      if (log === undefined || (kept !== undefined && kept[1].atMs <= log[1].atMs))
        this.#forget(...(kept as [string, Kept]));
      else this.#drop(...log);
    }
  }
}

/** A tenant's name cannot reach another's ids: it is encoded, and ends at the first space. */
/** The key of `tenant`'s response `id` (or of what goes with it) in a process's maps. */
export function keyOf(tenant: string, id: string): string {
  return `${encodeURIComponent(tenant)} ${id}`;
}

function sizeOf(text: string): number {
  return 2 * text.length;
}
