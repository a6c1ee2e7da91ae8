/**
 * The Prometheus metrics of what the gateway keeps beyond a request, on its registry: whether
 * the shared store answers, the saves of what it learned, and the Responses API's kept
 * responses by operation and result (closed sets), and those it holds in memory.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** What became of one operation on a kept response. */
export type KeptResult = 'ok' | 'none' | 'too_large' | 'unavailable';

export class StateMetrics {
  readonly storeUp: Gauge;
  readonly learnedSaves: Counter<'result'>;
  readonly learnedRestored: Gauge;
  readonly kept: Counter<'op' | 'result'>;
  readonly #registers: Registry[];

  constructor(registry: Registry) {
    const registers = [registry];
    this.#registers = registers;
    this.storeUp = new Gauge({
      name: 'goodput_shared_store_up',
      help: '1 while the shared state store (Redis, or memory) answers, else 0.',
      registers,
    });
    this.learnedSaves = new Counter({
      name: 'goodput_learned_state_saves_total',
      help: 'Saves of what the gateway learned (--learned-state), by result (ok, error).',
      labelNames: ['result'],
      registers,
    });
    this.learnedRestored = new Gauge({
      name: 'goodput_learned_state_restored',
      help: '1 when this gateway started from saved learned state (--learned-state), 0 when cold.',
      registers,
    });
    this.kept = new Counter({
      name: 'goodput_kept_responses_total',
      help: "Operations on the Responses API's kept responses (op: save, load, delete), by result: ok, none (no such response), too_large (not kept), unavailable (the shared store down).",
      labelNames: ['op', 'result'],
      registers,
    });
  }

  /** The kept responses this process holds in memory, read at scrape time. */
  keptInMemory(read: () => { readonly count: number; readonly bytes: number }): void {
    new Gauge({
      name: 'goodput_kept_responses_memory',
      help: 'Kept responses this process holds in memory (without --redis, or kept while it was down), some maybe past their TTL.',
      registers: this.#registers,
      collect() {
        this.set(read().count);
      },
    });
    new Gauge({
      name: 'goodput_kept_responses_memory_bytes',
      help: 'Bytes of the kept responses this process holds in memory, at most --responses-memory.',
      registers: this.#registers,
      collect() {
        this.set(read().bytes);
      },
    });
  }
}
