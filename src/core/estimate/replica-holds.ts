/**
 * What the ready replicas hold, replica by replica, as flow control places requests: each within
 * its own KV cache (`kvCapacityOf`: its engine's report, else the fleet's) and at its own pace.
 * Main rule: never a fleet-wide figure times the replica count — a fleet of a large and a small
 * cache is not two large ones — so the queue-wait model counts what each replica can take.
 */
import type { ReplicaLedger } from '../fleet/replica-ledger.ts';
import type { ReplicaSnapshot } from '../fleet/replica-snapshot.ts';
import type { Ms, Tokens } from '../request/units.ts';
import type { FlowControl } from '../routing/flow-control.ts';
import type { WaitAsk } from './fleet-load.ts';

/**
 * How many requests like `ask` (each of its choices a stream of `context` tokens) the replicas
 * hold at once under flow control: each replica at least one, within its own KV cache.
 */
export function holdAlike(
  flow: FlowControl,
  replicas: readonly ReplicaSnapshot[],
  itlSloMs: Ms,
  context: Tokens,
  ask: Pick<WaitAsk, 'kvTokens' | 'seqs'>,
): number {
  const { kvTokens, seqs = 1 } = ask;
  const byCache = new Map<Tokens | undefined, number>();
  let held = 0;
  for (const r of replicas) {
    let here = byCache.get(r.kvCapacityTokens);
    if (here === undefined) {
      const streams = flow.steadyBatch(itlSloMs, context, kvTokens / seqs, 0, 1, r);
      here = Math.max(1, Math.floor(streams / seqs));
      byCache.set(r.kvCapacityTokens, here);
    }
    held += here;
  }
  return held;
}

/**
 * The streams of `context` the replicas' steps carry beside a new prompt's `chunk` within the
 * gap budget, each replica at its measured pace (an idle one at the profile's), as
 * `FlowControl.holds` and `fit` place them; KV is counted apart (`kvSlotsShort`). Counted at the
 * profile's pace and without the chunk, a slow fleet was promised places it lacked.
 */
export function heldAtPace(
  flow: FlowControl,
  ledger: ReplicaLedger,
  replicas: readonly ReplicaSnapshot[],
  itlSloMs: Ms,
  context: Tokens,
  chunk: Tokens,
): number {
  let held = 0;
  let lastPace = NaN;
  let atPace = 0;
  for (const r of replicas) {
    const a = ledger.replicas[r.index];
    const pace = a.entries.length === 0 ? 1 : a.pace;
    if (pace !== lastPace) {
      lastPace = pace;
      atPace = flow.steadyBatch(itlSloMs, context, 1, chunk, pace);
    }
    held += atPace;
  }
  return held;
}

/**
 * KV replica by replica: how many places short the replicas are of `ahead` requests of the
 * running mix's mean reservation (`mixKv`) and then this one (`kvTokens`), each on one replica;
 * ≤ 0 when they hold them all. A burst that filled every replica to within less than one request
 * leaves free KV that, summed, holds several; the request behind the next one would wait for
 * running ones to end, seconds, while the sum promised it the next dispatch.
 */
export function kvSlotsShort(
  flow: FlowControl,
  ledger: ReplicaLedger,
  replicas: readonly ReplicaSnapshot[],
  ahead: number,
  kvTokens: Tokens,
  mixKv: Tokens,
): number {
  let slots = 0;
  // The fewest places this one takes from those ahead, on the replica it costs least.
  let leastTaken = Infinity;
  for (const r of replicas) {
    const free = Math.max(0, flow.kvLimitOf(r) - ledger.replicas[r.index].reservedKvTokens);
    const here = Math.floor(free / mixKv);
    slots += here;
    if (free >= kvTokens) {
      leastTaken = Math.min(leastTaken, here - Math.floor((free - kvTokens) / mixKv));
    }
  }
  // No replica holds it: something must end first, besides what those ahead need.
  return leastTaken === Infinity ? 1 + Math.max(0, ahead - slots) : ahead - slots + leastTaken;
}
