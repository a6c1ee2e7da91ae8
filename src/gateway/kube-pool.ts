/**
 * The Kubernetes actuator (`goodput serve --engine-pool kubernetes`): the autoscaler's decision
 * acted on through the scale subresource of a StatefulSet or a LeaderWorkerSet, whose replicas
 * are ordinals: slot i is pod (or group) i, at the backend URL its template names
 * (`http://vllm-{i}.vllm.llm.svc:8000`), ready when the gateway's scrape of it succeeds.
 *
 * Both controllers remove the highest ordinals first on scale-in, so the gateway decides which
 * replica goes, and drains it before it goes: the highest serving slot is taken out of routing,
 * its streams run to their end (at most `maxDrainMs`; any cut then is logged and counted), and
 * only when every slot above the new count has drained is `spec.replicas` lowered. Scale-out
 * cancels a drain before it asks for a new replica. The pods are the cluster's: closing the
 * gateway leaves them as they are, and a patch that fails is sent again on the next decision.
 */
import type { Ms } from '../core/request/units.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { Timers } from '../core/ports/timers.ts';
import type { Scale } from './kube-api.ts';
import type { OpsLog } from './ops-log.ts';
import type { PoolFleet, ScalePool } from './scale-export.ts';
import { watchDrain, type DrainWatch } from './pool-drain.ts';

/** `drained`: its streams ended, its pod still there until the replicas are lowered. */
type KubeSlotState = 'stopped' | 'starting' | 'ready' | 'draining' | 'drained';

export interface KubePoolOptions {
  /** Slots, one a replica the pool may run (`--max-replicas`). */
  readonly slots: number;
  /** The backend URL of replica `{i}`. */
  readonly backendUrl: string;
  /** The scale subresource (kube-api.ts). */
  readonly scale: { get(): Promise<Scale>; set(replicas: number): Promise<Scale> };
  readonly maxDrainMs: Ms;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly log: OpsLog;
}

interface Slot {
  state: KubeSlotState;
  drain: DrainWatch | null;
}

export class KubernetesPool implements ScalePool {
  readonly urls: readonly string[];
  /** Drains finished, and streams a drain's time limit cut. */
  drained = 0;
  cut = 0;
  /** Replica counts set, and refused by the API server. */
  readonly resizes = { ok: 0, error: 0 };
  readonly #o: KubePoolOptions;
  readonly #slots: Slot[];
  #fleet: PoolFleet | null = null;
  /** `spec.replicas` as the pool last set it (or found it). */
  #replicas: number;
  /** The last patch failed (or the object has more than the slots): sent at the next decision. */
  #unsent = false;
  #patching: Promise<void> = Promise.resolve();
  #closed = false;

  private constructor(o: KubePoolOptions, replicas: number) {
    this.#o = o;
    this.urls = Array.from({ length: o.slots }, (_, i) =>
      o.backendUrl.replaceAll('{i}', String(i)),
    );
    this.#replicas = replicas;
    this.#slots = this.urls.map((_, i) => ({
      state: i < replicas ? 'starting' : 'stopped',
      drain: null,
    }));
  }

  /** A pool over the replicas the object has now (at most `slots` of them counted). */
  static async open(o: KubePoolOptions): Promise<KubernetesPool> {
    const scale = await o.scale.get();
    const pool = new KubernetesPool(o, Math.min(o.slots, scale.spec));
    if (scale.spec > o.slots) {
      o.log.warn(
        { replicas: scale.spec, max_replicas: o.slots },
        `engine pool: the object has ${scale.spec} replicas, more than --max-replicas; the next decision lowers them`,
      );
      pool.#unsent = true;
    }
    return pool;
  }

  attach(fleet: PoolFleet): void {
    this.#fleet = fleet;
  }

  count(state: 'starting' | 'ready' | 'draining'): number {
    this.#notice();
    return this.#slots.filter(
      (s) => s.state === state || (state === 'draining' && s.state === 'drained'),
    ).length;
  }

  apply(desired: number): void {
    if (this.#closed || this.#fleet === null) return;
    this.#notice();
    const serving = (s: Slot) => s.state === 'starting' || s.state === 'ready';
    let current = this.#slots.filter(serving).length;
    // Out: take back a draining replica, then ask for new ones above the highest.
    for (let i = this.#slots.length - 1; current < desired && i >= 0; i--) {
      const s = this.#slots[i];
      if (s.state === 'draining' || s.state === 'drained') {
        this.#undrain(i);
        current++;
      }
    }
    if (current < desired) {
      const to = Math.min(this.#slots.length, this.#replicas + (desired - current));
      for (let i = this.#replicas; i < to; i++) {
        this.#slots[i].state = 'starting';
        this.#fleet.setDraining(i, false);
      }
      this.#resize(to);
    }
    // In: the highest serving replicas drain; the replicas are lowered once the top has drained.
    for (let i = this.#slots.length - 1; current > desired && i >= 0; i--) {
      if (!serving(this.#slots[i])) continue;
      this.#drain(i);
      current--;
    }
    this.#shrink();
    if (this.#unsent) this.#resize(this.#replicas);
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const s of this.#slots) s.drain?.cancel();
    await this.#patching;
  }

  #drain(i: number): void {
    const slot = this.#slots[i];
    this.#fleet?.setDraining(i, true);
    slot.state = 'draining';
    const url = this.urls[i];
    this.#o.log.info(
      { slot: i, url, streams: this.#fleet?.inFlightOn(i) ?? 0 },
      `engine pool: draining ${url} (no new requests; its streams finish)`,
    );
    slot.drain = watchDrain(i, { ...this.#o, fleet: this.#fleet }, (tookMs, cut) => {
      slot.drain = null;
      this.cut += cut;
      this.drained++;
      slot.state = 'drained';
      this.#o.log[cut > 0 ? 'warn' : 'info'](
        { slot: i, drain_ms: Math.round(tookMs), cut },
        `engine pool: drained ${url} in ${Math.round(tookMs)} ms`,
      );
      this.#shrink();
    });
  }

  #undrain(i: number): void {
    const slot = this.#slots[i];
    slot.drain?.cancel();
    slot.drain = null;
    this.#fleet?.setDraining(i, false);
    slot.state = this.#fleet?.isReady(i) === true ? 'ready' : 'starting';
    this.#o.log.info({ slot: i }, `engine pool: ${this.urls[i]} serves again (drain cancelled)`);
  }

  /** Lowers the replicas past every drained slot at the top. */
  #shrink(): void {
    let k = this.#replicas;
    while (k > 0 && this.#slots[k - 1].state === 'drained') k--;
    if (k === this.#replicas) return;
    for (let i = k; i < this.#replicas; i++) this.#slots[i].state = 'stopped';
    this.#resize(k);
  }

  /** Sets `spec.replicas` to `n`, one patch at a time, in the order asked. */
  #resize(n: number): void {
    const from = this.#replicas;
    this.#replicas = n;
    this.#unsent = false;
    this.#patching = this.#patching.then(async () => {
      if (this.#replicas !== n) return;
      try {
        await this.#o.scale.set(n);
        this.resizes.ok++;
        if (from !== n)
          this.#o.log.info({ replicas: n, was: from }, `engine pool: replicas ${from} → ${n}`);
      } catch (e) {
        this.resizes.error++;
        if (this.#replicas === n) this.#unsent = true;
        this.#o.log.warn(
          { replicas: n, err: (e as Error).message },
          `engine pool: setting replicas to ${n} failed (sent again at the next decision): ${(e as Error).message}`,
        );
      }
    });
  }

  /** Starting replicas the gateway now scrapes as ready are ready. */
  #notice(): void {
    this.#slots.forEach((s, i) => {
      if (s.state === 'starting' && this.#fleet?.isReady(i) === true) {
        s.state = 'ready';
        this.#o.log.info({ slot: i }, `engine pool: ${this.urls[i]} is ready`);
      }
    });
  }
}
