/**
 * The simulator's event queue: a binary min-heap ordered by (time, sequence). The sequence
 * number belongs to this instance, so two runs never share a counter and equal-time events
 * fire in the order they were scheduled — the basis of byte-identical reports.
 */
import type { TimerHandle } from '../core/ports/timers.ts';
import type { Ms } from '../core/request/units.ts';

/** One scheduled event; it is its own timer handle (cancelled: its function dropped). */
export class SimEvent implements TimerHandle {
  readonly at: Ms;
  readonly seq: number;
  fn: (() => void) | null;

  constructor(at: Ms, seq: number, fn: () => void) {
    this.at = at;
    this.seq = seq;
    this.fn = fn;
  }

  cancel(): void {
    this.fn = null;
  }
}

export class EventQueue {
  private heap: SimEvent[] = [];
  private nextSeq = 0;

  get size(): number {
    return this.heap.length;
  }

  peek(): SimEvent | undefined {
    return this.heap[0];
  }

  push(at: Ms, fn: () => void): SimEvent {
    const event = new SimEvent(at, this.nextSeq++, fn);
    const heap = this.heap;
    heap.push(event);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(event, heap[parent])) break;
      heap[i] = heap[parent];
      i = parent;
    }
    heap[i] = event;
    return event;
  }

  pop(): SimEvent | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length === 0 || last === undefined) return top;
    let i = 0;
    const n = heap.length;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && before(heap[right], heap[left]) ? right : left;
      if (!before(heap[child], last)) break;
      heap[i] = heap[child];
      i = child;
    }
    heap[i] = last;
    return top;
  }
}

function before(a: SimEvent, b: SimEvent): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
