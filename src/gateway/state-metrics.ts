/**
 * The Prometheus metrics of what the gateway keeps beyond a request, on its registry: whether
 * the shared store answers, the saves of what it learned, and the Responses API's kept
 * responses by operation and result (closed sets).
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** What became of one operation on a kept response. */
export type KeptResult = 'ok' | 'none' | 'too_large' | 'unavailable';

export class StateMetrics {
  readonly storeUp: Gauge;
  readonly learnedSaves: Counter<'result'>;
  readonly learnedRestored: Gauge;
  readonly kept: Counter<'op' | 'result'>;

  constructor(registry: Registry) {
    const registers = [registry];
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
}
