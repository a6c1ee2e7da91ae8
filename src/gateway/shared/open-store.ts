/**
 * Builds the gateway's shared-state store from its settings: in memory when no Redis URL is
 * given (one replica, nothing to share), else Redis behind the failover policy with an
 * in-memory fallback that enforces 1/`replicas` of each quota. Resolves once the first health
 * check has settled, so the store's state is known before the gateway takes requests. The
 * Redis client is loaded only when a URL is given.
 */
import type { Clock } from '../../core/ports/clock.ts';
import type { Timers } from '../../core/ports/timers.ts';
import type { Ms } from '../../core/request/units.ts';
import { FailoverStore, type FailurePolicy } from './failover-store.ts';
import { MemoryStore } from './memory-store.ts';
import type { SharedStore } from './shared-store.ts';
import type { OpsLog } from '../ops-log.ts';

export interface SharedStateOptions {
  /** `redis://host:port`; absent: in memory. */
  readonly redisUrl?: string;
  readonly failure?: FailurePolicy;
  /** Gateway replicas sharing the quotas: the fallback enforces 1/replicas of each. */
  readonly replicas?: number;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly newId: () => string;
  readonly onChange?: (up: boolean, cause?: string) => void;
  /** How long a kept response is kept. */
  readonly responseTtlMs?: Ms;
  /** The most bytes of kept responses one process holds in memory. */
  readonly responseCapacityBytes?: number;
}

/** The store, and the memory store in it (the whole store, or Redis's fallback). */
export interface OpenedStore {
  readonly store: SharedStore;
  readonly memory: MemoryStore;
}

export async function openSharedStore(o: SharedStateOptions): Promise<OpenedStore> {
  const kept = { responseTtlMs: o.responseTtlMs, responseCapacityBytes: o.responseCapacityBytes };
  if (o.redisUrl === undefined) {
    const memory = new MemoryStore({ clock: o.clock, ...kept });
    return { store: memory, memory };
  }
  const { RedisStore } = await import('./redis-store.ts');
  const fallback = new MemoryStore({ clock: o.clock, replicas: o.replicas ?? 1, ...kept });
  const store = new FailoverStore({
    primary: new RedisStore({
      url: o.redisUrl,
      clock: o.clock,
      timers: o.timers,
      newId: o.newId,
      responseTtlMs: o.responseTtlMs,
    }),
    fallback,
    policy: o.failure ?? 'open',
    clock: o.clock,
    timers: o.timers,
    onChange: o.onChange,
  });
  await store.start();
  return { store, memory: fallback };
}

/** The line the gateway logs when its Redis goes down or comes back, saying what it does now. */
export function logStoreTransition(
  log: OpsLog,
  up: boolean,
  s: { readonly failure: FailurePolicy; readonly replicas: number },
  cause?: string,
): void {
  if (up) return log.info({ store: 'redis' }, 'shared state store is up: quotas are shared again');
  const then =
    s.failure === 'open'
      ? `failing open: local limits (1/${s.replicas} of each quota)`
      : 'failing closed: requests that need shared state get 503';
  log.warn(
    { store: 'redis', cause: cause ?? 'unreachable', failure: s.failure },
    `shared state store is down: ${then}`,
  );
}
