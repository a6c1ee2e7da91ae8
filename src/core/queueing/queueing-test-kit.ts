/**
 * A small continuous-batching replica for queueing tests, driven through the pipeline the
 * simulator and the gateway share: each step every running request generates one token (its
 * first after the prefill), requests end at their output length, and the pipeline is pumped with
 * the replica's load before each step.
 */
import { Pipeline } from '../pipeline.ts';
import { resolvePolicy } from '../config/policy.ts';
import { SPEC } from '../admission/admission-test-kit.ts';
import type { Ticket } from './ticket.ts';
import type { LlmRequest } from '../request/request.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';

export const STEP_MS = 10;

interface Running {
  readonly t: Ticket<string>;
  generated: number;
}

export interface Loop {
  readonly p: Pipeline<string>;
  /** Offers a request now (it must not be refused). */
  offer(req: Omit<LlmRequest, 'arrivalMs'>): Ticket<string>;
  /** Runs one engine step at the current time, then advances it. */
  step(): void;
  readonly nowMs: number;
  /** Tokens the running batch holds (prompt + generated). */
  readonly heldTokens: number;
  /** Tickets dispatched so far, in order. */
  readonly dispatched: readonly Ticket<string>[];
}

/** An admit-all, flow-controlled pipeline over one replica of `spec` (default 16 slots, 20K KV). */
export function replicaLoop(
  policyDoc: Record<string, unknown>,
  spec: FleetSpec = { ...SPEC, maxNumSeqs: 16, replicaKvTokens: 20_000 },
): Loop {
  const policy = resolvePolicy({
    name: 'queueing-test',
    policy_revision: 'queueing-test@1',
    admission: { type: 'admit-all' },
    dispatch: { type: 'flow-control' },
    routing: { type: 'least-request' },
    // 20K tokens of KV: the cold reserve (4,096 of output each) would make the first requests'
    // KV, not the queue's order, decide what goes.
    estimate: { prior_output_reserve: 512 },
    ...policyDoc,
  });
  const running: Running[] = [];
  const dispatched: Ticket<string>[] = [];
  const p = new Pipeline<string>(policy, spec, {
    dispatch: (t) => {
      running.push({ t, generated: 0 });
      dispatched.push(t);
    },
    expire: () => {},
  });
  let nowMs = 0;
  const held = () => running.reduce((n, r) => n + r.t.req.inputTokens + r.generated, 0);
  const snapshot = () => [
    {
      index: 0,
      inFlight: running.length,
      running: running.length,
      waiting: 0,
      kvUsage: held() / spec.replicaKvTokens,
    },
  ];
  return {
    p,
    dispatched,
    // A kit made once per test: its getters cost nothing that matters.
    // eslint-disable-next-line no-restricted-syntax
    get nowMs() {
      return nowMs;
    },
    // eslint-disable-next-line no-restricted-syntax
    get heldTokens() {
      return held();
    },
    offer(req) {
      const offer = p.offer({ ...req, arrivalMs: nowMs }, req.id, nowMs, snapshot());
      if (offer.outcome === 'reject')
        throw new Error(`${req.id} refused: ${offer.decision.reason}`);
      return (offer as { ticket: Ticket<string> }).ticket;
    },
    step() {
      p.pump(nowMs, snapshot());
      for (const r of [...running]) {
        if (r.generated++ === 0) p.firstToken(r.t, nowMs - r.t.asked.arrivalMs);
        else p.token(r.t, nowMs);
        if (r.generated === r.t.req.outputTokens) {
          p.end(r.t, r.generated, true, nowMs);
          running.splice(running.indexOf(r), 1);
        }
      }
      nowMs += STEP_MS;
    },
  };
}
