/**
 * The autoscaling ticks of the gateway replicas that share one fleet, through the shared store:
 * at each tick a replica posts its own part of the demand — arrivals, good and missed requests,
 * the request mix, its queue — and reads the others' for its next decision. A load balancer
 * sends each replica only a part, so without them every replica would scale for its part, and
 * the leader of a shared pool (kube-pool.ts) for a fraction of the fleet. A tick is kept for
 * three ticks, so a replica gone drops out of the sum. While the store cannot be reached, each
 * decides on its own part, and says so once.
 */
import type { WindowShare } from '../core/autoscale/scale-window.ts';
import type { Ms } from '../core/request/units.ts';
import type { OpsLog } from './ops-log.ts';
import type { SharedStore } from './shared/shared-store.ts';

/** One replica's tick: its share of the window, and the requests queued in it. */
export interface PeerShare extends WindowShare {
  readonly queued: number;
}

/** What a tick reads and posts of the others (ScaleExport). */
export interface ScalePeers {
  /** The other replicas' latest ticks. */
  others(): readonly PeerShare[];
  /** Posts this replica's tick; the others' are read again with it. */
  post(share: PeerShare): void;
}

const FIELDS = [
  'arrivalRps',
  'goodRps',
  'missedRps',
  'mixArrivals',
  'mixInput',
  'mixCompletions',
  'mixOutput',
  'queued',
] as const;

export interface PeerWindowsOptions {
  readonly store: SharedStore;
  /** This replica's id in the store. */
  readonly replica: string;
  readonly tickMs: Ms;
  readonly log: OpsLog;
}

export class PeerWindows implements ScalePeers {
  readonly #o: PeerWindowsOptions;
  #others: readonly PeerShare[] = [];
  #posting = false;
  #failing = false;

  constructor(o: PeerWindowsOptions) {
    this.#o = o;
  }

  others(): readonly PeerShare[] {
    return this.#others;
  }

  post(share: PeerShare): void {
    if (this.#posting) return;
    this.#posting = true;
    const { store, replica, tickMs } = this.#o;
    const text = JSON.stringify(Object.fromEntries(FIELDS.map((f) => [f, share[f]])));
    store
      .postWindow(replica, text, 3 * tickMs)
      .then(() => store.windows())
      .then(
        (windows) => {
          this.#others = [...windows]
            .filter(([r]) => r !== replica)
            .flatMap(([, t]) => shareOf(t) ?? []);
          if (this.#failing) this.#o.log.info({}, 'autoscaler: the other replicas are heard again');
          this.#failing = false;
        },
        (e: Error) => {
          // Their parts unknown, this replica decides on its own until the store answers.
          this.#others = [];
          if (!this.#failing) {
            this.#o.log.warn(
              { err: e.message },
              `autoscaler: the other replicas' demand cannot be read (${e.message}); deciding on this replica's alone`,
            );
          }
          this.#failing = true;
        },
      )
      .finally(() => {
        this.#posting = false;
      });
  }
}

/** A tick posted by another replica; undefined when it is not one (another version's). */
function shareOf(text: string): PeerShare | undefined {
  try {
    const v = JSON.parse(text) as Record<string, unknown>;
    const ok = FIELDS.every((f) => typeof v[f] === 'number' && Number.isFinite(v[f]) && v[f] >= 0);
    return ok ? (v as unknown as PeerShare) : undefined;
  } catch {
    return undefined;
  }
}
