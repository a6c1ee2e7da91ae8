/**
 * A one-consumer queue from callbacks to `for await`: the engine's listener pushes a request's
 * events as they happen, the HTTP layer pulls them at its own pace. Main rule: pushing never
 * blocks the engine (events buffer while the consumer is slow), and after `end` the consumer
 * drains what was pushed and then sees the end; pushes after `end` are dropped.
 */
export class EventChannel<T> implements AsyncIterator<T> {
  private buffer: T[] = [];
  private head = 0;
  private waiter: ((r: IteratorResult<T>) => void) | null = null;
  private ended = false;

  get closed(): boolean {
    return this.ended;
  }

  push(value: T): void {
    if (this.ended) return;
    const w = this.waiter;
    if (w !== null) {
      this.waiter = null;
      w({ value, done: false });
    } else {
      this.buffer.push(value);
    }
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    const w = this.waiter;
    this.waiter = null;
    w?.({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<T>> {
    if (this.head < this.buffer.length) {
      const value = this.buffer[this.head++];
      if (this.head === this.buffer.length) {
        this.buffer = [];
        this.head = 0;
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }

  /** The consumer stopped early (`break` in `for await`): nothing more will be read. */
  return(): Promise<IteratorResult<T>> {
    this.end();
    this.buffer = [];
    this.head = 0;
    return Promise.resolve({ value: undefined, done: true });
  }
}
