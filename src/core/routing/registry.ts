/**
 * Every router, registered once: a named composition of filters, weighted scorers and a picker
 * (`route.ts`). Config and presets refer to routers only by these names.
 */
import type { RouterSpec } from './route.ts';

const SPECS: readonly RouterSpec[] = [
  {
    type: 'round-robin',
    description: 'the next replica in turn, blind to load (a Kubernetes Service)',
    filters: [],
    scorers: [],
    picker: 'rotate',
  },
  {
    type: 'least-request',
    description:
      'the fewest requests this control plane has in flight (Envoy LEAST_REQUEST, production-stack)',
    filters: [],
    scorers: [{ name: 'in-flight', weight: 1 }],
    picker: 'lowest',
  },
];

export const ROUTERS: Readonly<Record<string, RouterSpec>> = Object.fromEntries(
  SPECS.map((s) => [s.type, s]),
);
