/**
 * A Map that keeps only its newest `capacity` entries, each for at most `ttlMs`: enough for
 * the gateway's decision lookup and idempotent replay without unbounded growth. Time comes from
 * the caller (`nowMs`), so tests need no clock. Insertion order is kept in a ring of keys, so
 * evicting the oldest costs the same at any size: taking a Map's first key instead walks past
 * every entry deleted before it, which at 20,000 entries and thousands of sets a second made
 * each set cost microseconds.
 */
import type { Ms } from '../core/request/units.ts';

interface Entry<V> {
  readonly value: V;
  readonly atMs: Ms;
  /** Which set made it, so the ring evicts an entry only while it is that set's. */
  readonly serial: number;
}

export class BoundedMap<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly ring: ({ key: string; serial: number } | undefined)[];
  private next = 0;
  private serial = 0;
  private readonly ttlMs: Ms;

  constructor(capacity: number, ttlMs: Ms = Infinity) {
    this.ring = new Array(capacity);
    this.ttlMs = ttlMs;
  }

  set(key: string, value: V, nowMs: Ms): void {
    const serial = ++this.serial;
    const oldest = this.ring[this.next];
    if (oldest !== undefined && this.entries.get(oldest.key)?.serial === oldest.serial) {
      this.entries.delete(oldest.key);
    }
    this.ring[this.next] = { key, serial };
    this.next = (this.next + 1) % this.ring.length;
    this.entries.set(key, { value, atMs: nowMs, serial });
  }

  get(key: string, nowMs: Ms): V | undefined {
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    if (nowMs - e.atMs > this.ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** Forgets `key`; its slot in the ring is let go when the ring comes round to it. */
  delete(key: string): void {
    this.entries.delete(key);
  }

  /** The entries within their TTL at `nowMs`, oldest first. */
  *live(nowMs: Ms): IterableIterator<[string, V]> {
    for (const [key, e] of this.entries) {
      if (nowMs - e.atMs <= this.ttlMs) yield [key, e.value];
    }
  }
}
