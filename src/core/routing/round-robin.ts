/** Round-robin: each request to the next replica in turn, blind to load — what a plain Kubernetes Service does. */
import type { Router } from './router.ts';

export const ROUND_ROBIN = 'round-robin';

export interface RoundRobinState {
  next: number;
}

export function roundRobin(): Router<RoundRobinState> {
  return {
    type: ROUND_ROBIN,
    initState: () => ({ next: 0 }),
    pick(state, _req, replicas) {
      const i = state.next % replicas.length;
      state.next = i + 1;
      return i;
    },
  };
}
