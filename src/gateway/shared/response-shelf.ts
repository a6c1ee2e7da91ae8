/**
 * The Responses API's kept responses in one process: texts by tenant and id, each for at most
 * `ttlMs`, and at most `capacityBytes` of them in all, the oldest forgotten first to make room.
 * A Map keeps them in the order they were kept, so the oldest is its first entry. Time comes
 * from the caller (`nowMs`), as in `BoundedMap`.
 */
import type { Ms } from '../../core/request/units.ts';
import { RESPONSE_MAX_BYTES } from './shared-store.ts';

interface Kept {
  readonly text: string;
  readonly atMs: Ms;
}

export class ResponseShelf {
  readonly #kept = new Map<string, Kept>();
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
    this.delete(tenant, id);
    while (this.#bytes + size > this.#capacityBytes) {
      const [oldest, kept] = this.#kept.entries().next().value as [string, Kept];
      this.#forget(oldest, kept);
    }
    this.#kept.set(keyOf(tenant, id), { text, atMs: nowMs });
    this.#bytes += size;
    return true;
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
    this.#bytes -= sizeOf(kept.text);
  }
}

/** A tenant's name cannot reach another's ids: it is encoded, and ends at the first space. */
function keyOf(tenant: string, id: string): string {
  return `${encodeURIComponent(tenant)} ${id}`;
}

function sizeOf(text: string): number {
  return 2 * text.length;
}
