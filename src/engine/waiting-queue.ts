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

  /**
   * The member served next: the first level's head — or, with `boosted`, the head of a lower
   * level that `boosted` says must go first (a deadline near).
   */
  peekFront(boosted?: (t: T) => boolean): T | undefined {
    this.from = -1;
    for (let i = 0; i < this.levels.length; i++) {
      const q = this.levels[i].q;
      if (q.size === 0) continue;
      if (this.from < 0) this.from = i;
      if (boosted === undefined) break;
      if (boosted(q.peekFront() as T)) {
        this.from = i;
        break;
      }
    }
    return this.from < 0 ? undefined : this.levels[this.from].q.peekFront();
  }

  /** Takes the member the last `peekFront` returned. */
  popFront(): T | undefined {
    if (this.from < 0) this.peekFront();
    const t = this.from < 0 ? undefined : this.levels[this.from].q.popFront();
    this.from = -1;
    return t;
  }

  /** The level `peekFront` chose (−1: none yet). */
  private from = -1;

  private level(priority: number): Deque<T> {
    let i = 0;
    while (i < this.levels.length && this.levels[i].priority < priority) i++;
    if (i < this.levels.length && this.levels[i].priority === priority) return this.levels[i].q;
    const q = new Deque<T>(1024);
    this.levels.splice(i, 0, { priority, q });
    return q;
  }
}
