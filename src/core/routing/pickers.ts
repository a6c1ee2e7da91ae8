/**
 * Every routing picker, registered once by name: how a replica is chosen among the survivors
 * of the filters, by their weighted scores or by a rule of its own (the baselines that model
 * another router's logic).
 */
import type { Picker } from './route.ts';

/** Each request to the next replica in turn, blind to scores: what a Kubernetes Service does. */
const rotate: Picker<{ next: number }> = {
  name: 'rotate',
  initState: () => ({ next: 0 }),
  pick(state, _scores, replicas) {
    const i = state.next % replicas.length;
    state.next = i + 1;
    return i;
  },
};

/**
 * The lowest score; ties go to the first from a start that rotates with each pick, so an idle
 * fleet fills evenly rather than replica 0 first.
 */
const lowest: Picker<{ rotation: number }> = {
  name: 'lowest',
  initState: () => ({ rotation: 0 }),
  pick(state, scores, replicas) {
    const n = replicas.length;
    const start = state.rotation % n;
    let best = start;
    for (let k = 1; k < n; k++) {
      const i = (start + k) % n;
      if (scores[i] < scores[best]) best = i;
    }
    state.rotation = start + 1;
    return best;
  },
};

/** The lowest score; ties broken by a seeded generator (mulberry32, its state a plain number). */
const lowestSeeded: Picker<{ seed: number }> = {
  name: 'lowest-seeded',
  initState: (seed) => ({ seed: seed >>> 0 }),
  pick(state, scores, replicas) {
    const n = replicas.length;
    let best = 0;
    let ties = 1;
    for (let i = 1; i < n; i++) {
      if (scores[i] < scores[best]) {
        best = i;
        ties = 1;
      } else if (scores[i] === scores[best]) ties++;
    }
    if (ties === 1) return best;
    // The k-th of the tied ones, k drawn uniformly.
    let k = Math.floor(nextUniform(state) * ties);
    for (let i = best; i < n; i++) {
      if (scores[i] !== scores[best]) continue;
      if (k-- === 0) return i;
    }
    return best;
  },
};

/**
 * SGLang's cache-aware router, as its defaults have it: while the fleet's loads (requests in
 * flight) are balanced — max − min ≤ 32 or max ≤ 1.1 × min — a request whose prompt matches a
 * replica's cache by more than half goes to the best match, any other to the replica with the
 * smallest cache; once they are not, to the least loaded. Among equal matches it takes the same
 * replica every time (SGLang's radix tree answers with the first worker on the matched node), so
 * a hot prefix piles onto one replica until the loads fall out of balance. Ties of the smallest
 * cache rotate (there, every routed prompt grows the cache it went to). Scores are not read.
 */
const CACHE_THRESHOLD = 0.5;
const BALANCE_ABS = 32;
const BALANCE_REL = 1.1;
const cacheAware: Picker<{ rotation: number }> = {
  name: 'cache-aware',
  initState: () => ({ rotation: 0 }),
  pick(state, _scores, replicas, r, ctx) {
    const n = replicas.length;
    let min = 0;
    let max = 0;
    let match = 0;
    for (let i = 1; i < n; i++) {
      const x = replicas[i];
      if (x.inFlight < replicas[min].inFlight) min = i;
      if (x.inFlight > replicas[max].inFlight) max = i;
      if (ctx.hits[x.index] > ctx.hits[replicas[match].index]) match = i;
    }
    const hi = replicas[max].inFlight;
    const lo = replicas[min].inFlight;
    if (hi - lo > BALANCE_ABS && hi > lo * BALANCE_REL) return min;
    const rate = ctx.hits[replicas[match].index] / Math.max(1, r.req.inputTokens);
    if (rate > CACHE_THRESHOLD) return match;
    const start = state.rotation++ % n;
    let smallest = start;
    for (let k = 1; k < n; k++) {
      const i = (start + k) % n;
      if (ctx.cachedBlocks(replicas[i].index) < ctx.cachedBlocks(replicas[smallest].index))
        smallest = i;
    }
    return smallest;
  },
};

/**
 * vLLM production-stack's session router: a request with a session goes where its session
 * hashes (rendezvous hashing over the replicas, so a replica joining or leaving moves only its
 * own share of sessions), blind to load; one without a session to the least loaded.
 */
const sessionHash: Picker<{ rotation: number }> = {
  name: 'session-hash',
  initState: () => ({ rotation: 0 }),
  pick(state, _scores, replicas, r) {
    const session = r.req.session;
    const n = replicas.length;
    if (session === undefined) {
      const start = state.rotation++ % n;
      let best = start;
      for (let k = 1; k < n; k++) {
        const i = (start + k) % n;
        if (replicas[i].inFlight < replicas[best].inFlight) best = i;
      }
      return best;
    }
    let best = 0;
    let bestWeight = -1;
    for (let i = 0; i < n; i++) {
      const w = hash32(session, replicas[i].index);
      if (w > bestWeight) {
        best = i;
        bestWeight = w;
      }
    }
    return best;
  },
};

export const PICKERS: Readonly<Record<string, Picker>> = Object.fromEntries(
  [rotate, lowest, lowestSeeded, cacheAware, sessionHash].map((p) => [p.name, p as Picker]),
);

/** mulberry32: the next uniform draw in [0, 1), advancing `state.seed` (plain data). */
export function nextUniform(state: { seed: number }): number {
  state.seed = (state.seed + 0x6d2b79f5) >>> 0;
  let t = state.seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

/** FNV-1a of `key` and `salt`, mixed: a replica's rendezvous weight for a session. */
function hash32(key: string, salt: number): number {
  let h = 0x811c9dc5 ^ salt;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return h >>> 0;
}
