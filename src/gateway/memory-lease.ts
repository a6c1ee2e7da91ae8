/**
 * A Lease kept in memory as the API server keeps one, for tests of the election and the pools
 * that share one: a version per write, and a write over a stale version (or a create of one
 * that exists) refused with a `LeaseConflict`. `view(cut)` is one gateway's way to it, failing
 * while `cut()` says so (a gateway cut off from the API server).
 */
import type { VirtualClock } from '../runtime/virtual-clock.ts';
import { LeaseConflict, type LeaseRecord, type LeaseStore } from './kube-lease.ts';

/**
 * Runs `clock` `ms` on in 50 ms steps, letting the Lease's answers settle between them (they
 * are promises that settle in microtasks), and calls `each` after every step.
 */
export async function passInSteps(
  clock: VirtualClock,
  ms: number,
  each: () => void = () => {},
): Promise<void> {
  const until = clock.now() + ms;
  while (clock.now() < until) {
    const to = Math.min(until, clock.now() + 50);
    clock.at(to, () => {});
    clock.run(to);
    for (let i = 0; i < 100; i++) await Promise.resolve();
    each();
  }
}

export function memoryLease() {
  let lease: LeaseRecord | undefined;
  let version = 0;
  const writes: LeaseRecord[] = [];
  const write = (r: Omit<LeaseRecord, 'version'>) => {
    lease = { ...r, version: String(++version) };
    writes.push(lease);
    return lease;
  };
  const view = (cut: () => boolean = () => false): LeaseStore => {
    const reach = () => {
      if (cut()) throw new Error('connect ETIMEDOUT');
    };
    return {
      get: async () => (reach(), lease),
      create: async (r) => {
        reach();
        if (lease !== undefined) throw new LeaseConflict('AlreadyExists');
        return write(r);
      },
      update: async (r) => {
        reach();
        if (lease?.version !== r.version) throw new LeaseConflict('Conflict');
        const { version: _, ...rest } = r;
        return write(rest);
      },
    };
  };
  return { view, writes, lease: () => lease };
}
