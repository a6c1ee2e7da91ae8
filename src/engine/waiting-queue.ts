/**
 * The engine's waiting queue: FIFO under vLLM's `fcfs` scheduling policy; under `priority`, FIFO
 * within each request priority and lower priorities first (vLLM's priority scheduler orders its
 * waiting queue by (priority, arrival)). A preempted sequence goes back to the front of its own
 * level. A handful of levels at most, so a level is found by a short scan.
 */
import { Deque } from './deque.ts';

export class WaitingQueue<T> {
  /** Levels by priority, ascending; each FIFO. */
  private readonly levels: { readonly priority: number; readonly q: Deque<T> }[] = [];
  private readonly priorityOf: (t: T) => number;

  constructor(priorityOf: (t: T) => number) {
    this.priorityOf = priorityOf;
  }

  pushBack(t: T): void {
    this.level(this.priorityOf(t)).pushBack(t);
  }

  pushFront(t: T): void {
    this.level(this.priorityOf(t)).pushFront(t);
  }

  peekFront(): T | undefined {
    for (const l of this.levels) if (l.q.size > 0) return l.q.peekFront();
    return undefined;
  }

  popFront(): T | undefined {
    for (const l of this.levels) if (l.q.size > 0) return l.q.popFront();
    return undefined;
  }

  private level(priority: number): Deque<T> {
    let i = 0;
    while (i < this.levels.length && this.levels[i].priority < priority) i++;
    if (i < this.levels.length && this.levels[i].priority === priority) return this.levels[i].q;
    const q = new Deque<T>(1024);
    this.levels.splice(i, 0, { priority, q });
    return q;
  }
}
