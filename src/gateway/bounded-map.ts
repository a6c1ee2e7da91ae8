/**
 * A Map that keeps only its newest `capacity` entries, each for at most `ttlMs`: enough for
 * the gateway's decision lookup and idempotent replay without unbounded growth. Time comes from
 * the caller (`nowMs`), so tests need no clock.
 */
import type { Ms } from '../core/request/units.ts';

export class BoundedMap<V> {
  private readonly entries = new Map<string, { value: V; atMs: Ms }>();
  private readonly capacity: number;
  private readonly ttlMs: Ms;

  constructor(capacity: number, ttlMs: Ms = Infinity) {
    this.capacity = capacity;
    this.ttlMs = ttlMs;
  }

  set(key: string, value: V, nowMs: Ms): void {
    this.entries.delete(key);
    this.entries.set(key, { value, atMs: nowMs });
    if (this.entries.size > this.capacity) {
      this.entries.delete(this.entries.keys().next().value as string);
    }
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
}
