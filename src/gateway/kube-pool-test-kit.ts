// A cluster as the Kubernetes pool's tests need one, on a virtual clock: a scale subresource
// that does as told (or refuses every patch, when told to), and a fleet of backends whose
// readiness, streams and draining a test sets and reads.
import { VirtualClock } from '../runtime/virtual-clock.ts';
import type { Scale } from './kube-api.ts';

export function kubeCluster(initial: number) {
  const clock = new VirtualClock();
  const patches: number[] = [];
  let replicas = initial;
  let refusal: Error | undefined;
  const scale = {
    get: async (): Promise<Scale> => ({ spec: replicas, status: replicas }),
    set: async (n: number): Promise<Scale> => {
      if (refusal !== undefined) throw refusal;
      patches.push(n);
      replicas = n;
      return { spec: n, status: replicas };
    },
  };
  const ready = new Set<number>();
  const streams = new Map<number, number>();
  const draining = new Set<number>();
  const fleet = {
    isReady: (i: number) => ready.has(i),
    setDraining: (i: number, on: boolean) => void (on ? draining.add(i) : draining.delete(i)),
    inFlightOn: (i: number) => streams.get(i) ?? 0,
    reportedOn: () => undefined,
    running: () => {},
  };
  return {
    clock,
    patches,
    scale,
    ready,
    streams,
    draining,
    fleet,
    replicas: () => replicas,
    /** Someone else's `kubectl scale`. */
    scaleElsewhere: (n: number) => void (replicas = n),
    /** The API server refuses every patch with `e`; undefined: it takes them again. */
    refusePatches: (e: Error | undefined) => void (refusal = e),
  };
}
