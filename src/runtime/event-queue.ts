/**
 * The simulator's event queue: a binary min-heap ordered by (time, sequence). The sequence
 * number belongs to this instance, so two runs never share a counter and equal-time events
 * fire in the order they were scheduled — the basis of byte-identical reports.
 */
import type { TimerHandle } from '../core/ports/timers.ts';
import type { Ms } from '../core/request/units.ts';
import { BinaryHeap } from '../core/stats/binary-heap.ts';

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
  private readonly heap = new BinaryHeap<SimEvent>(before);
  private nextSeq = 0;

  get size(): number {
    return this.heap.size;
  }

  peek(): SimEvent | undefined {
    return this.heap.peek();
  }

  push(at: Ms, fn: () => void): SimEvent {
    const event = new SimEvent(at, this.nextSeq++, fn);
    this.heap.push(event);
    return event;
  }

  pop(): SimEvent | undefined {
    return this.heap.pop();
  }
}

function before(a: SimEvent, b: SimEvent): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
