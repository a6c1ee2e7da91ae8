/**
 * The routing extension point. Rules: `pick` is called only with a non-empty list of ready
 * replicas and returns an index into that list; it is deterministic given its state and inputs;
 * state is plain data created by `initState` and owned by the caller.
 */
import type { LlmRequest } from '../request/request.ts';
import type { ReplicaSnapshot } from './replica-snapshot.ts';

export interface Router<S = unknown> {
  readonly type: string;
  initState(): S;
  pick(state: S, req: LlmRequest, replicas: readonly ReplicaSnapshot[]): number;
}
