/**
 * A double-ended queue on a growable ring buffer. The waiting queue needs both ends (a
 * preempted sequence goes back to the front) and must stay O(1) per operation with hundreds of
 * thousands queued, which `Array.shift`/`unshift` are not.
 */
export class Deque<T> {
  private buf: (T | undefined)[];
  private mask: number;
  private head = 0;
  private count = 0;

  constructor(initialCapacity = 16) {
    let cap = 4;
    while (cap < initialCapacity) cap *= 2;
    this.buf = new Array<T | undefined>(cap).fill(undefined);
    this.mask = cap - 1;
  }

  get size(): number {
    return this.count;
  }

  peekFront(): T | undefined {
    return this.count === 0 ? undefined : this.buf[this.head];
  }

  /** The i-th item from the front (0-based), for audits. */
  at(i: number): T | undefined {
    return i < 0 || i >= this.count ? undefined : this.buf[(this.head + i) & this.mask];
  }

  pushBack(item: T): void {
    if (this.count === this.buf.length) this.grow();
    this.buf[(this.head + this.count) & this.mask] = item;
    this.count++;
  }

  pushFront(item: T): void {
    if (this.count === this.buf.length) this.grow();
    this.head = (this.head - 1) & this.mask;
    this.buf[this.head] = item;
    this.count++;
  }

  popFront(): T | undefined {
    if (this.count === 0) return undefined;
    const item = this.buf[this.head];
    // Clear the slot so a finished sequence does not stay reachable from the buffer.
    this.buf[this.head] = undefined;
    this.head = (this.head + 1) & this.mask;
    this.count--;
    return item;
  }

  private grow(): void {
    const old = this.buf;
    const next = new Array<T | undefined>(old.length * 2).fill(undefined);
    for (let i = 0; i < this.count; i++) next[i] = old[(this.head + i) & this.mask];
    this.buf = next;
    this.mask = next.length - 1;
    this.head = 0;
  }
}
