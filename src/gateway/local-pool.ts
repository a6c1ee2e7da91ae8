/**
 * The local actuator (`goodput serve --engine-pool local`): the autoscaler's decision acted on
 * with real `goodput engine` processes on this machine, so the whole loop — burst, scale-out,
 * ready, drain, scale-in — runs on one laptop. The pool has a slot per group it may run
 * (`--max-replicas`), each a port the gateway fronts as a backend whether or not an engine is
 * there; an engine is started with its ready time as a start-up delay (drawn per start, as the
 * simulator draws it), and it counts as ready when the gateway's scrape of it succeeds.
 *
 * An engine not ready well past its ready time (twice it, and 30 s more: hung loading, say) is
 * given up on — killed, logged — so the next decision starts another.
 *
 * Scale-in is the drain protocol: the slot is taken out of routing, its streams run to their
 * end (at most `maxDrainMs`; any cut then is logged and counted), and only then is its engine
 * stopped. Scale-out prefers cancelling a drain to starting a cold engine.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import type { ReadyTime } from '../core/fleet/replica-group.ts';
import type { Ms } from '../core/request/units.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { Rng } from '../core/ports/rng.ts';
import type { Timers } from '../core/ports/timers.ts';
import type { OpsLog } from './ops-log.ts';
import type { PoolFleet, ScalePool } from './scale-export.ts';
import { watchDrain, type DrainWatch } from './pool-drain.ts';

export type SlotState = 'stopped' | 'starting' | 'ready' | 'draining';

export interface LocalPoolOptions {
  readonly slots: number;
  /** The command an engine is, before its own flags: e.g. [node, bin/goodput.js, 'engine']. */
  readonly command: readonly string[];
  /** The engine flags every slot shares (model, GPU, limits). */
  readonly engineArgs: readonly string[];
  readonly readyTime: ReadyTime;
  readonly rng: Rng;
  readonly maxDrainMs: Ms;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly log: OpsLog;
}

interface Slot {
  state: SlotState;
  child: ChildProcess | null;
  drain: DrainWatch | null;
  /** Starting: when it is given up on unless ready. */
  readyByMs: Ms;
}

/** What an engine is given past twice its ready time to be ready: its process's own start. */
const START_GRACE_MS: Ms = 30_000;

export class LocalEnginePool implements ScalePool {
  readonly urls: readonly string[];
  /** Engines started, drains finished, and streams a drain's time limit cut. */
  started = 0;
  drained = 0;
  cut = 0;
  /** Its engines serve this gateway alone: it always acts. */
  readonly leading = true;
  private readonly opts: LocalPoolOptions;
  private readonly ports: readonly number[];
  private readonly slots: Slot[];
  private fleet: PoolFleet | null = null;
  private closed = false;

  private constructor(opts: LocalPoolOptions, ports: readonly number[]) {
    this.opts = opts;
    this.ports = ports;
    this.urls = ports.map((p) => `http://127.0.0.1:${p}`);
    this.slots = ports.map(() => ({ state: 'stopped', child: null, drain: null, readyByMs: 0 }));
  }

  /** A pool of `opts.slots` slots, each on a port free now on this machine. */
  static async open(opts: LocalPoolOptions): Promise<LocalEnginePool> {
    const ports: number[] = [];
    for (let i = 0; i < opts.slots; i++) ports.push(await freePort());
    return new LocalEnginePool(opts, ports);
  }

  /** The gateway's backends, one per slot in order: the pool can act once it has them. */
  attach(fleet: PoolFleet): void {
    this.fleet = fleet;
    fleet.running((i) => this.slots[i].state !== 'stopped');
  }

  /** Slots in `state`, a starting one counted ready once the gateway's scrape finds it so. */
  count(state: SlotState): number {
    this.notice();
    return this.slots.filter((s) => s.state === state).length;
  }

  /** Acts on a decision: `desired` groups ready or starting. */
  apply(desired: number): void {
    if (this.closed || this.fleet === null) return;
    this.notice();
    let current = this.slots.filter((s) => s.state === 'starting' || s.state === 'ready').length;
    // Out: take back a draining engine before starting a cold one.
    for (let i = 0; current < desired && i < this.slots.length; i++) {
      if (this.slots[i].state === 'draining') {
        this.undrain(i);
        current++;
      }
    }
    for (let i = 0; current < desired && i < this.slots.length; i++) {
      if (this.slots[i].state === 'stopped') {
        this.start(i);
        current++;
      }
    }
    // In: an engine still starting first (nothing lost), then the ready one with fewest streams.
    while (current > desired) {
      const victim = this.victim();
      if (victim < 0) break;
      if (this.slots[victim].state === 'starting') this.stop(victim, 'cancelled while starting');
      else this.drain(victim);
      current--;
    }
  }

  /** Stops every engine (SIGTERM) and waits for them to exit. */
  async close(): Promise<void> {
    this.closed = true;
    const exits: Promise<void>[] = [];
    for (const s of this.slots) {
      s.drain?.cancel();
      const child = s.child;
      if (child === null || child.exitCode !== null || child.signalCode !== null) continue;
      exits.push(new Promise((done) => child.once('exit', () => done())));
      child.kill('SIGTERM');
    }
    await Promise.all(exits);
  }

  private start(i: number): void {
    const r = this.opts.readyTime;
    const readyS = (r.minMs + this.opts.rng.next() * (r.maxMs - r.minMs)) / 1000;
    const [cmd, ...pre] = this.opts.command;
    const args = [
      ...pre,
      ...this.opts.engineArgs,
      '--port',
      String(this.ports[i]),
      '--startup-delay',
      readyS.toFixed(3),
      '--seed',
      String(this.started),
    ];
    // An IPC channel the engine watches: it exits when this process does, even killed outright.
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
    child.channel?.unref();
    const slot = this.slots[i];
    slot.child = child;
    slot.readyByMs = this.opts.clock.now() + 2 * readyS * 1000 + START_GRACE_MS;
    this.started++;
    this.slots[i].state = 'starting';
    this.opts.log.info(
      { slot: i, url: this.urls[i], ready_in_s: Number(readyS.toFixed(3)), engine_pid: child.pid },
      `engine pool: starting an engine on ${this.urls[i]}`,
    );
    child.once('exit', (code, signal) => {
      if (slot.child !== child) return;
      slot.child = null;
      slot.drain?.cancel();
      slot.drain = null;
      this.fleet?.setDraining(i, false);
      const expected = slot.state === 'stopped';
      if (!expected && !this.closed) {
        this.opts.log.warn(
          { slot: i, code, signal },
          `engine pool: the engine on ${this.urls[i]} exited on its own`,
        );
      }
      this.slots[i].state = 'stopped';
    });
  }

  private drain(i: number): void {
    const slot = this.slots[i];
    this.fleet?.setDraining(i, true);
    this.slots[i].state = 'draining';
    this.opts.log.info(
      { slot: i, url: this.urls[i], streams: this.fleet?.inFlightOn(i) ?? 0 },
      `engine pool: draining ${this.urls[i]} (no new requests; its streams finish)`,
    );
    slot.drain = watchDrain(i, { ...this.opts, fleet: this.fleet }, (tookMs, cut) => {
      slot.drain = null;
      if (slot.state !== 'draining') return;
      this.cut += cut;
      this.drained++;
      this.opts.log[cut > 0 ? 'warn' : 'info'](
        { slot: i, drain_ms: Math.round(tookMs), cut },
        `engine pool: drained ${this.urls[i]} in ${Math.round(tookMs)} ms; stopping it`,
      );
      this.stop(i, 'drained');
    });
  }

  private undrain(i: number): void {
    const slot = this.slots[i];
    slot.drain?.cancel();
    slot.drain = null;
    this.fleet?.setDraining(i, false);
    this.slots[i].state = 'ready';
    this.opts.log.info({ slot: i }, `engine pool: ${this.urls[i]} serves again (drain cancelled)`);
  }

  private stop(i: number, why: string): void {
    const slot = this.slots[i];
    this.slots[i].state = 'stopped';
    if (why !== 'drained') {
      this.opts.log.info({ slot: i }, `engine pool: stopping ${this.urls[i]} (${why})`);
    }
    slot.child?.kill('SIGTERM');
  }

  private victim(): number {
    let best = -1;
    let bestKey = Infinity;
    this.slots.forEach((s, i) => {
      // A starting engine costs nothing to cancel: it ranks before every ready one.
      const key =
        s.state === 'starting' ? -1 : s.state === 'ready' ? (this.fleet?.inFlightOn(i) ?? 0) : NaN;
      if (key < bestKey) {
        best = i;
        bestKey = key;
      }
    });
    return best;
  }

  /** Starting engines the gateway now scrapes as ready are ready; those past their time, given up. */
  private notice(): void {
    const now = this.opts.clock.now();
    this.slots.forEach((s, i) => {
      if (s.state !== 'starting') return;
      if (this.fleet?.isReady(i)) {
        s.state = 'ready';
        this.opts.log.info({ slot: i }, `engine pool: ${this.urls[i]} is ready`);
      } else if (now > s.readyByMs) {
        s.state = 'stopped';
        this.opts.log.warn(
          { slot: i, engine_pid: s.child?.pid },
          `engine pool: the engine on ${this.urls[i]} is not ready in time; killing it, to start another`,
        );
        // A hung process may not take a SIGTERM (a stopped one cannot): it is not serving anyone.
        s.child?.kill('SIGKILL');
      }
    });
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
