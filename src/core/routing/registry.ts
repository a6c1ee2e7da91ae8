/** Every router, registered once: type name → factory. Config and presets refer to routers only by these names. */
import type { Router } from './router.ts';
import { ROUND_ROBIN, roundRobin } from './round-robin.ts';
import { LEAST_REQUEST, leastRequest } from './least-request.ts';

export const ROUTERS: Readonly<Record<string, () => Router>> = {
  [ROUND_ROBIN]: roundRobin as () => Router,
  [LEAST_REQUEST]: leastRequest as () => Router,
};
