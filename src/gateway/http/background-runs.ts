/**
 * The background responses one gateway process runs (background.ts), by response id: what stops
 * one (a cancel here, or its record marked cancelled, deleted or ended at another replica), and
 * this replica's part among the others that share its store. Every `SWEEP_MS` a replica with a
 * shared store says it is alive (`beat`), so the records of what it runs are not taken for lost
 * (kept-records.ts `loadSettled`), and whether it serves — not draining — so the others may
 * hand it work; it reads the marks of the runs it has, and takes the background responses other
 * replicas handed over as they drained, to run them here (background-handover.ts). At its own
 * drain it hands over those still queued, when another replica serves.
 */
import type { TimerHandle } from '../../core/ports/timers.ts';
import { RequestStopped } from '../stop.ts';
import { LOST_AFTER_MS, loadHead, type KeepingDeps } from './kept-records.ts';
import { RunStream, type Time } from './response-stream.ts';
import { follow, type EventsOut } from './stream-readers.ts';

/** How often a replica beats, reads the marks of the runs it has, and takes orders handed over. */
export const SWEEP_MS = 2_000;
/** The most marks read, or orders taken, at a time. */
const SWEEP_BATCH = 64;

/** Statuses a background response has ended in. */
export const ENDED: ReadonlySet<string> = new Set([
  'completed',
  'incomplete',
  'failed',
  'cancelled',
]);

interface Run {
  readonly tenant: string;
  readonly stop: AbortController;
  cancelled: boolean;
  /** Its record is in the store: from then on, a record gone means it was deleted. */
  kept: boolean;
  /** It waits in the queue: admitted, not yet sent upstream. */
  queued: boolean;
  /** Stopped to run at another replica instead. */
  handed: boolean;
  /** Its events, when it was asked to stream. */
  readonly stream: RunStream | undefined;
}

export class BackgroundRuns {
  readonly #runs = new Map<string, Run>();
  readonly #keeping: KeepingDeps;
  readonly #time: Time;
  /** The store is shared with other replicas: marks are read back, and work handed over. */
  readonly #shared: boolean;
  #timer: TimerHandle | undefined;
  #closed = false;
  #draining = false;
  /** Draining, it hands over each run that is queued, or comes to be, to the replicas serving. */
  #handing = false;
  /** Where the last sweep stopped reading: the next goes on from there. */
  #cursor = 0;
  /** Runs an order another replica handed over (background-handover.ts `adopt`). */
  #adopt: ((order: string) => Promise<void>) | undefined;
  /** The streams' readers here, each until its client's stream ends. */
  readonly #readers = new Set<Promise<void>>();
  /** Resolves when this replica shuts down (`closeReaders`). */
  readonly #closing: Promise<void>;
  #close: () => void = () => {};

  constructor(keeping: KeepingDeps, time: Time, shared: boolean) {
    this.#keeping = keeping;
    this.#time = time;
    this.#shared = shared;
    this.#closing = new Promise((resolve) => (this.#close = resolve));
    keeping.metrics.state.backgroundRunning(() => this.#runs.size);
  }

  /**
   * Takes the orders other replicas hand over from now on, running each with `adopt`: the
   * replica beats, serving, from now on.
   */
  adoptWith(adopt: (order: string) => Promise<void>): void {
    this.#adopt = adopt;
    if (this.#shared) this.#sweepSoon(0);
  }

  /** A run's end, counted by the status it ended in. */
  ended(status: string): void {
    this.#keeping.metrics.state.backgroundEnded.inc({ status });
  }

  /** Whether `id` runs here and was cancelled. */
  cancelled(id: string): boolean {
    return this.#runs.get(id)?.cancelled === true;
  }

  /** Whether the store is shared with other replicas, which may take a run's order. */
  get shared(): boolean {
    return this.#shared;
  }

  /** Whether this replica drains: it takes no order more. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Whether `id` runs here and was stopped to be handed over. */
  handed(id: string): boolean {
    return this.#runs.get(id)?.handed === true;
  }

  /**
   * Runs `id` here; `streamed`: its events are told and logged as they come, numbered on from
   * `told` (those another replica told before it handed it over).
   */
  add(
    id: string,
    tenant: string,
    stop: AbortController,
    streamed: boolean,
    told = 0,
  ): RunStream | undefined {
    if (this.#shared && this.#runs.size === 0) this.#beat();
    const stream = streamed
      ? new RunStream(this.#keeping, this.#time, tenant, id, told)
      : undefined;
    const run = { tenant, stop, cancelled: false, kept: false, queued: false, handed: false };
    this.#runs.set(id, { ...run, stream });
    this.#sweepSoon(SWEEP_MS);
    return stream;
  }

  /** `id`'s record is in the store: the sweep reads its mark from now on. */
  kept(id: string): void {
    const run = this.#runs.get(id);
    if (run === undefined) return;
    run.kept = true;
    this.#handIfQueued(run);
  }

  /** `id` waits in the queue (`queued`), or has left it. */
  waiting(id: string, queued: boolean): void {
    const run = this.#runs.get(id);
    if (run === undefined) return;
    run.queued = queued;
    this.#handIfQueued(run);
  }

  /**
   * Writes the events of `tenant`'s response `id` after `startingAfter` to `out` as they come,
   * until its stream ends or its client goes: as its run makes them when it runs here.
   */
  follow(tenant: string, id: string, startingAfter: number, out: EventsOut): Promise<void> {
    const run = this.#runs.get(id);
    const stream = run?.tenant === tenant ? run.stream : undefined;
    const deps = { ...this.#keeping, ...this.#time, closing: this.#closing };
    const reading = follow(deps, tenant, id, startingAfter, stream, out);
    this.#readers.add(reading);
    return reading.finally(() => this.#readers.delete(reading));
  }

  /**
   * Ends every reader here, each telling its client where it got to (its replica shuts down:
   * it takes the stream up again on another); settles once they have written it.
   */
  async closeReaders(): Promise<void> {
    this.#closed = true;
    this.#close();
    await Promise.all(this.#readers);
  }

  delete(id: string): void {
    this.#runs.delete(id);
  }

  /** Stops `id` as cancelled, if it runs here for `tenant`; false when it does not. */
  cancel(tenant: string, id: string): boolean {
    const run = this.#runs.get(id);
    if (run === undefined || run.tenant !== tenant) return false;
    run.cancelled = true;
    run.stop.abort();
    return true;
  }

  /** Stops `id`, its record ended elsewhere: it keeps nothing more. */
  stop(id: string): void {
    this.#runs.get(id)?.stop.abort();
  }

  /**
   * The drain begins: this replica serves no more, and stops the runs still queued for another
   * replica serving to take (each keeps its order in the store as it stops, background.ts), and
   * any that comes to be queued later (admitted as the drain began). None is when no other
   * replica serves: they wait here for the drain. Resolves with how many were queued then.
   */
  async handOver(): Promise<number> {
    this.#draining = true;
    const replica = this.#keeping.replica;
    if (!this.#shared || replica === undefined) return 0;
    const { store } = this.#keeping;
    await store.beat(replica, LOST_AFTER_MS, false).catch(() => {});
    const others = await store.serving().catch(() => []);
    if (!others.some((r) => r !== replica)) return 0;
    this.#handing = true;
    let handed = 0;
    for (const run of this.#runs.values()) if (this.#handIfQueued(run)) handed++;
    return handed;
  }

  /** Stops `run` for another replica to take, if this one hands over and it waits, kept. */
  #handIfQueued(run: Run): boolean {
    if (!this.#handing || !run.queued || !run.kept || run.cancelled || run.handed) return false;
    run.handed = true;
    run.stop.abort(new RequestStopped('handed_over'));
    return true;
  }

  #sweepSoon(afterMs: number): void {
    if (!this.#shared || this.#closed || this.#timer !== undefined) return;
    const { clock, timers } = this.#time;
    this.#timer = timers.at(clock.now() + afterMs, () => {
      void this.#sweepOnce().finally(() => {
        this.#timer = undefined;
        // A replica that takes handed-over work sweeps for good; one that does not, while it runs.
        if (this.#runs.size > 0 || (this.#adopt !== undefined && !this.#draining))
          this.#sweepSoon(SWEEP_MS);
      });
    });
  }

  /**
   * Says in the store that this replica is alive, so the records of the responses it runs are
   * not taken for lost (kept-records.ts `loadSettled`), and whether it serves.
   */
  #beat(): void {
    const replica = this.#keeping.replica;
    if (replica === undefined) return;
    const serving = this.#adopt !== undefined && !this.#draining;
    void this.#keeping.store.beat(replica, LOST_AFTER_MS, serving).catch(() => {});
  }

  /**
   * Beats, reads the marks of up to `SWEEP_BATCH` runs — stops those cancelled, deleted or ended
   * elsewhere (taken for lost) — and takes what other replicas handed over.
   */
  async #sweepOnce(): Promise<void> {
    this.#beat();
    const ids = [...this.#runs.keys()];
    const from = this.#cursor % Math.max(1, ids.length);
    const batch = [...ids.slice(from), ...ids.slice(0, from)].slice(0, SWEEP_BATCH);
    this.#cursor = from + batch.length;
    for (const id of batch) {
      const run = this.#runs.get(id);
      if (run === undefined || run.cancelled || !run.kept) continue;
      const kept = await loadHead(this.#keeping, run.tenant, id).catch(() => null);
      // A response deleted or marked cancelled elsewhere runs no further, nor one kept as ended
      // there (taken for lost); one the store cannot read now is read again next time.
      if (kept === undefined || kept?.response.status === 'cancelled') this.cancel(run.tenant, id);
      else if (kept !== null && ENDED.has(kept.response.status)) run.stop.abort();
    }
    await this.#takeOrders();
  }

  /** Runs here what other replicas handed over as they drained, `SWEEP_BATCH` at a time. */
  async #takeOrders(): Promise<void> {
    const adopt = this.#adopt;
    for (;;) {
      if (adopt === undefined || this.#draining || this.#closed) return;
      const orders = await this.#keeping.store.takeHandedOver(SWEEP_BATCH).catch(() => []);
      // One that fails here for no refusal (a fault) is left to be taken for lost.
      const failed = () => this.#keeping.metrics.state.handovers.inc({ op: 'failed' });
      await Promise.all(orders.map((o) => adopt(o).catch(failed)));
      if (orders.length < SWEEP_BATCH) return;
    }
  }

  close(): void {
    this.#closed = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }
}
