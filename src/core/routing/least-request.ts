/**
 * Least-request: the replica with the fewest requests in flight from this control plane (as
 * Envoy's LEAST_REQUEST and production-stack's router do). Ties rotate, so an idle fleet is
 * filled evenly rather than replica 0 first.
 */
import type { Router } from './router.ts';

export const LEAST_REQUEST = 'least-request';

export interface LeastRequestState {
  rotation: number;
}

export function leastRequest(): Router<LeastRequestState> {
  return {
    type: LEAST_REQUEST,
    initState: () => ({ rotation: 0 }),
    pick(state, _req, replicas) {
      const n = replicas.length;
      const start = state.rotation % n;
      let best = start;
      for (let k = 1; k < n; k++) {
        const i = (start + k) % n;
        if (replicas[i].inFlight < replicas[best].inFlight) best = i;
      }
      state.rotation = start + 1;
      return best;
    },
  };
}
