/**
 * The scale patches a Kubernetes pool sends (`kube-pool.ts`): one at a time, in the order
 * asked. One no longer wanted when its turn comes (a later count asked since, the lead lost) is
 * dropped; while the API server has asked for quiet (a 429's or a 503's Retry-After) none is
 * sent. A patch that fails, or is held back, leaves its count unsent: the pool's next decision
 * sends it again.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { Ms } from '../core/request/units.ts';
import { KubeError } from './kube-client.ts';
import type { OpsLog } from './ops-log.ts';

export interface PatchOptions {
  readonly scale: { set(replicas: number): Promise<unknown> };
  readonly clock: Clock;
  readonly log: OpsLog;
}

export class ScalePatches {
  /** Replica counts set, and refused by the API server. */
  readonly counts = { ok: 0, error: 0 };
  /** The last count asked is not set yet (it failed, or was held back). */
  unsent = false;
  readonly #o: PatchOptions;
  #chain: Promise<void> = Promise.resolve();
  #asked = 0;
  #done = 0;
  #quietUntilMs: Ms = 0;

  constructor(o: PatchOptions) {
    this.#o = o;
  }

  /** Patches asked so far: a read of the object begun at one count says nothing of later ones. */
  get asked(): number {
    return this.#asked;
  }

  /** Every patch asked has been sent or dropped. */
  get settled(): boolean {
    return this.#asked === this.#done;
  }

  /** Sets the replicas from `from` to `n` in its turn, if `wanted` then. */
  send(n: number, from: number, wanted: () => boolean): void {
    this.unsent = false;
    const turn = ++this.#asked;
    this.#chain = this.#chain.then(async () => {
      try {
        if (!wanted()) return;
        if (this.#o.clock.now() < this.#quietUntilMs) return void (this.unsent = true);
        await this.#set(n, from, wanted);
      } finally {
        this.#done = turn;
      }
    });
  }

  /** Resolves once every patch asked so far has been sent or dropped. */
  flushed(): Promise<void> {
    return this.#chain;
  }

  async #set(n: number, from: number, wanted: () => boolean): Promise<void> {
    const { log } = this.#o;
    try {
      await this.#o.scale.set(n);
      this.counts.ok++;
      if (from !== n) log.info({ replicas: n, was: from }, `engine pool: replicas ${from} → ${n}`);
    } catch (e) {
      this.counts.error++;
      if (wanted()) this.unsent = true;
      const quietMs = e instanceof KubeError ? (e.retryAfterMs ?? 0) : 0;
      this.#quietUntilMs = this.#o.clock.now() + quietMs;
      const why = (e as Error).message;
      const again =
        quietMs > 0 ? `in ${Math.ceil(quietMs / 1000)} s, as asked` : 'at the next decision';
      log.warn(
        { replicas: n, err: why, ...(quietMs > 0 ? { retry_after_ms: quietMs } : {}) },
        `engine pool: setting replicas to ${n} failed (sent again ${again}): ${why}`,
      );
    }
  }
}
