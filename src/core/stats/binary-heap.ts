/**
 * A binary min-heap over an array, ordered by `before` (a strict order: ties must be broken by
 * the caller's own key, so the order of equal items never depends on the heap's shape). The
 * simulator's event queue and a replica's steady group keep their events in one.
 */
export class BinaryHeap<T> {
  private readonly items: T[] = [];
  private readonly before: (a: T, b: T) => boolean;

  constructor(before: (a: T, b: T) => boolean) {
    this.before = before;
  }

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    this.items.push(item);
    this.siftUp(this.items.length - 1, item);
  }

  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) this.siftDown(0, last);
    return top;
  }

  /** Takes `item` out wherever it is; false if it is not in the heap. O(n) to find it. */
  remove(item: T): boolean {
    const items = this.items;
    const i = items.indexOf(item);
    if (i < 0) return false;
    const last = items.pop() as T;
    if (i === items.length) return true;
    this.siftUp(this.siftDown(i, last), last);
    return true;
  }

  clear(): void {
    this.items.length = 0;
  }

  /** Puts `item` at or above slot `from`, moving the parents it goes before down. */
  private siftUp(from: number, item: T): void {
    const items = this.items;
    let i = from;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(item, items[parent])) break;
      items[i] = items[parent];
      i = parent;
    }
    items[i] = item;
  }

  /** Puts `item` at or below slot `from`, moving the children that go before it up; returns its slot. */
  private siftDown(from: number, item: T): number {
    const items = this.items;
    const n = items.length;
    let i = from;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && this.before(items[right], items[left]) ? right : left;
      if (!this.before(items[child], item)) break;
      items[i] = items[child];
      i = child;
    }
    items[i] = item;
    return i;
  }
}
