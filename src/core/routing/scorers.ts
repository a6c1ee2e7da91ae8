/**
 * Every routing scorer, registered once by name: what it measures of a replica for a request,
 * in a documented unit, lower better (README.md gives each one's range and formula).
 */
import type { Scorer } from './route.ts';

/** Requests this control plane has in flight there (Envoy's LEAST_REQUEST signal). */
const inFlight: Scorer = {
  name: 'in-flight',
  unit: 'requests',
  score: (_r, replica) => replica.inFlight,
};

export const SCORERS: Readonly<Record<string, Scorer>> = {
  [inFlight.name]: inFlight,
};
