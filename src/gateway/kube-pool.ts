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
 * Each decision reads the object too: a count someone else set is taken as it is.
 *
 * Several gateways may share one object (`election`): one leads, elected on a Lease
 * (`leader-election.ts`), and acts; the others follow the word it writes there — the replicas
 * it set, those draining — and route nothing new to a draining replica. A drain then also waits
 * for the replica itself to report no request (the others' streams), and a gateway that comes
 * to lead reads the object again and goes on with the drains its word names.
 */
import type { Ms } from '../core/request/units.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { Timers } from '../core/ports/timers.ts';
import type { Scale } from './kube-api.ts';
import type { PoolWord } from './kube-lease.ts';
import { ScalePatches } from './kube-patches.ts';
import { LeaderElection, type ElectionOptions } from './leader-election.ts';
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
  /**
   * Other gateways share the object: the Lease they elect one on, and this gateway's name on it.
   * This one acts only while it leads.
   */
  readonly election?: Pick<ElectionOptions, 'lease' | 'identity' | 'epochMs'>;
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
  readonly #o: KubePoolOptions;
  readonly #slots: Slot[];
  #fleet: PoolFleet | null = null;
  /** `spec.replicas` as the pool last set it (or found it). */
  #replicas: number;
  /** The patches of `spec.replicas`; one failed (or too many replicas found) is `unsent`. */
  readonly #patches: ScalePatches;
  #closed = false;
  #leading: boolean;
  /** The slots are as the object is: false from taking the lead until it has been read again. */
  #synced: boolean;
  #syncing = false;
  /** A read of the object for a count set elsewhere is under way (`#look`). */
  #looking = false;
  /** The leader's word as last read, while another leads. */
  #heard: PoolWord | undefined;
  readonly #election: LeaderElection | undefined;

  private constructor(o: KubePoolOptions, replicas: number) {
    this.#o = o;
    this.#patches = new ScalePatches(o);
    this.urls = Array.from({ length: o.slots }, (_, i) =>
      o.backendUrl.replaceAll('{i}', String(i)),
    );
    this.#replicas = replicas;
    this.#leading = o.election === undefined;
    this.#synced = this.#leading;
    this.#election =
      o.election === undefined
        ? undefined
        : new LeaderElection({
            ...o,
            ...o.election,
            word: () => this.word(),
            onLead: (leading, word) => this.#lead(leading, word),
            onWord: (word) => this.#follow(word),
          });
    this.#slots = this.urls.map((_, i) => ({
      state: i < replicas ? 'starting' : 'stopped',
      drain: null,
    }));
  }

  /** A pool over the replicas the object has now (at most `slots` of them counted). */
  static async open(o: KubePoolOptions): Promise<KubernetesPool> {
    const scale = await o.scale.get();
    const pool = new KubernetesPool(o, Math.min(o.slots, scale.spec));
    if (scale.spec > o.slots) pool.#overMax(scale.spec);
    return pool;
  }

  /** The backends; from now on it acts, or (sharing the object) runs for the lead. */
  attach(fleet: PoolFleet): void {
    this.#fleet = fleet;
    fleet.running((i) => this.#slots[i].state !== 'stopped');
    this.#election?.start();
  }

  get leading(): boolean {
    return this.#leading;
  }

  /** Replica counts set, and refused by the API server. */
  get resizes(): { readonly ok: number; readonly error: number } {
    return this.#patches.counts;
  }

  /** It leads, and (sharing the object) renewed the Lease in time: paused past it, it does not. */
  get #acts(): boolean {
    return this.#leading && this.#election?.current !== false;
  }

  /** The operator's freeze, as the Lease holds it; undefined without one. */
  get frozen(): boolean | undefined {
    return this.#election?.frozen;
  }

  freeze(frozen: boolean): void {
    this.#election?.freeze(frozen);
  }

  /** What the leader says of the pool: the replicas it set, those draining. */
  word(): PoolWord {
    const draining = this.#slots.flatMap((s, i) =>
      s.state === 'draining' || s.state === 'drained' ? [i] : [],
    );
    return { replicas: this.#replicas, draining };
  }

  /**
   * This gateway leads from now on, after `word`'s leader (the object read again first), or no
   * longer does: its drains are the next leader's to finish.
   */
  #lead(leading: boolean, word: PoolWord | undefined): void {
    this.#heard = word;
    this.#leading = leading;
    this.#synced = false;
    if (leading) {
      this.#sync();
    } else {
      for (const s of this.#slots) s.drain?.cancel();
      this.#follow(word);
    }
  }

  /** The leader's word, while another leads: replicas above its count are gone, some drain. */
  #follow(word: PoolWord | undefined): void {
    if (this.#leading) return;
    this.#heard = word;
    if (word === undefined) return;
    this.#replicas = Math.min(this.#slots.length, word.replicas);
    this.#slots.forEach((s, i) => {
      s.drain = null;
      const draining = i < this.#replicas && word.draining.includes(i);
      this.#fleet?.setDraining(i, draining);
      if (i >= this.#replicas) s.state = 'stopped';
      else if (draining) s.state = 'draining';
      else s.state = this.#fleet?.isReady(i) === true ? 'ready' : 'starting';
    });
  }

  count(state: 'starting' | 'ready' | 'draining'): number {
    this.#notice();
    return this.#slots.filter(
      (s) => s.state === state || (state === 'draining' && s.state === 'drained'),
    ).length;
  }

  apply(desired: number): void {
    if (this.#closed || this.#fleet === null || !this.#acts) return;
    if (!this.#synced) return this.#sync();
    this.#look();
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
    if (this.#patches.unsent) this.#resize(this.#replicas);
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const s of this.#slots) s.drain?.cancel();
    await this.#patches.flushed();
    await this.#election?.close();
  }

  /**
   * Taking the lead: the object read again, the slots set from it and from the last leader's
   * word, and its drains gone on with.
   */
  #sync(): void {
    if (this.#syncing) return;
    this.#syncing = true;
    this.#o.scale.get().then(
      (scale) => {
        this.#syncing = false;
        if (!this.#leading || this.#closed) return;
        this.#replicas = Math.min(this.#slots.length, scale.spec);
        this.#patches.unsent = scale.spec > this.#slots.length;
        const draining = this.#heard?.draining ?? [];
        this.#slots.forEach((s, i) => {
          s.drain?.cancel();
          s.drain = null;
          this.#fleet?.setDraining(i, false);
          if (i >= this.#replicas) s.state = 'stopped';
          else s.state = this.#fleet?.isReady(i) === true ? 'ready' : 'starting';
        });
        for (const i of draining) if (i < this.#replicas) this.#drain(i, 'going on with');
        this.#synced = true;
        this.#o.log.info(
          { replicas: this.#replicas, draining },
          `engine pool: leading, with ${this.#replicas} replicas`,
        );
        this.#election?.poke();
      },
      (e: Error) => {
        this.#syncing = false;
        this.#o.log.warn(
          { err: e.message },
          `engine pool: reading the object failed (read again at the next decision): ${e.message}`,
        );
      },
    );
  }

  #drain(i: number, verb = 'draining'): void {
    const slot = this.#slots[i];
    this.#fleet?.setDraining(i, true);
    slot.state = 'draining';
    const url = this.urls[i];
    this.#o.log.info(
      { slot: i, url, streams: this.#fleet?.inFlightOn(i) ?? 0 },
      `engine pool: ${verb} ${url} (no new requests; its streams finish)`,
    );
    this.#election?.poke();
    const at = { ...this.#o, fleet: this.#fleet, othersToo: this.#election !== undefined };
    slot.drain = watchDrain(i, at, (tookMs, cut) => {
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
    this.#election?.poke();
  }

  /**
   * Reads the object, for a count set outside the gateway (`kubectl scale`, another controller):
   * taken as it is, so a replica someone added is routed to and drained before it goes, and one
   * someone removed is no longer waited for. A count read while a patch of the pool's own was
   * on its way says nothing.
   */
  #look(): void {
    if (this.#looking || !this.#patches.settled) return;
    this.#looking = true;
    const asked = this.#patches.asked;
    this.#o.scale.get().then(
      (scale) => {
        this.#looking = false;
        const spec = Math.min(this.#slots.length, scale.spec);
        const ours = asked !== this.#patches.asked || this.#patches.unsent;
        if (!this.#leading || this.#closed || ours) return;
        if (scale.spec > this.#slots.length) this.#overMax(scale.spec);
        if (spec === this.#replicas) return;
        this.#o.log.warn(
          { replicas: scale.spec, was: this.#replicas },
          `engine pool: the object's replicas were set to ${scale.spec} outside the gateway (it had set ${this.#replicas}); taken as they are`,
        );
        for (let i = spec; i < this.#replicas; i++) {
          this.#slots[i].drain?.cancel();
          this.#slots[i].drain = null;
          this.#slots[i].state = 'stopped';
          this.#fleet?.setDraining(i, false);
        }
        for (let i = this.#replicas; i < spec; i++) this.#slots[i].state = 'starting';
        this.#replicas = spec;
        this.#election?.poke();
      },
      () => {
        // A failed read changes nothing: the next decision reads again.
        this.#looking = false;
      },
    );
  }

  /** The object has more replicas than the slots (set so elsewhere): lowered at the next decision. */
  #overMax(replicas: number): void {
    this.#o.log.warn(
      { replicas, max_replicas: this.#slots.length },
      `engine pool: the object has ${replicas} replicas, more than --max-replicas; the next decision lowers them`,
    );
    this.#patches.unsent = true;
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
    this.#election?.poke();
    this.#patches.send(n, from, () => this.#replicas === n && this.#acts);
  }

  /**
   * Starting replicas the gateway now scrapes as ready are ready; a ready one it no longer does
   * (its pod gone, restarting, failing its scrape) is starting again: no capacity until it is back.
   */
  #notice(): void {
    this.#slots.forEach((s, i) => {
      const ready = this.#fleet?.isReady(i) === true;
      if (s.state === 'starting' && ready) {
        s.state = 'ready';
        this.#o.log.info({ slot: i }, `engine pool: ${this.urls[i]} is ready`);
      } else if (s.state === 'ready' && !ready) {
        s.state = 'starting';
        this.#o.log.warn({ slot: i }, `engine pool: ${this.urls[i]} is no longer ready`);
      }
    });
  }
}
