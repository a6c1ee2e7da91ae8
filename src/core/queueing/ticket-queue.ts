/**
 * A FIFO of waiting tickets that can also give up members from the middle (dispatched past a
 * head that did not fit, or expired): removed members are only marked and skipped, and the
 * array compacts when the dead prefix grows, so every operation is amortised O(1).
 */
export interface Queued {
  /** False once the ticket left the queue (dispatched, expired, cancelled). */
  queued: boolean;
}

/** What the dispatcher needs of a queue, whatever order it keeps. */
export interface WaitQueue<T extends Queued> {
  /** Members still queued. */
  readonly live: number;
  push(t: T): void;
  /** Takes `t` out (it must be a member still queued). */
  remove(t: T): void;
  /**
   * Up to `limit` members in the order they should be served, into `out` (cleared first);
   * `nowMs` lets an order that weighs waiting time see it.
   */
  collect(limit: number, out: T[], nowMs?: number): T[];
  /** Up to `limit` members, in the same order. */
  scan(limit: number): Iterable<T>;
  peek(): T | undefined;
  /** The member queued longest, whatever the order. */
  oldest(): T | undefined;
}

export class TicketQueue<T extends Queued> implements WaitQueue<T> {
  private items: T[] = [];
  private head = 0;
  /** Members still queued. */
  live = 0;

  push(t: T): void {
    t.queued = true;
    this.items.push(t);
    this.live++;
  }

  /** Takes `t` out (it must be a member still queued). */
  remove(t: T): void {
    t.queued = false;
    this.live--;
    this.trim();
  }

  /**
   * Up to `limit` queued members, oldest first, into `out` (cleared first): the dispatcher's
   * hot path, so no generator or array is allocated per call.
   */
  collect(limit: number, out: T[]): T[] {
    out.length = 0;
    for (let i = this.head; i < this.items.length && out.length < limit; i++) {
      const t = this.items[i];
      if (t.queued) out.push(t);
    }
    return out;
  }

  /** Up to `limit` queued members, oldest first. */
  *scan(limit: number): Generator<T> {
    let seen = 0;
    for (let i = this.head; i < this.items.length && seen < limit; i++) {
      const t = this.items[i];
      if (!t.queued) continue;
      seen++;
      yield t;
    }
  }

  peek(): T | undefined {
    this.trim();
    return this.head < this.items.length ? this.items[this.head] : undefined;
  }

  oldest(): T | undefined {
    return this.peek();
  }

  private trim(): void {
    while (this.head < this.items.length && !this.items[this.head].queued) this.head++;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}
