/** Every routing picker, registered once by name: how a replica is chosen from the scored survivors. */
import type { Picker } from './route.ts';

/** Each request to the next replica in turn, blind to scores: what a Kubernetes Service does. */
const rotate: Picker<{ next: number }> = {
  name: 'rotate',
  initState: () => ({ next: 0 }),
  pick(state, _scores, n) {
    const i = state.next % n;
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
  pick(state, scores, n) {
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

export const PICKERS: Readonly<Record<string, Picker>> = {
  [rotate.name]: rotate as Picker,
  [lowest.name]: lowest as Picker,
};
