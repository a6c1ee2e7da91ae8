// VTC's fairness bound, through the pipeline the simulator and the gateway share: two tenants,
// both continuously backlogged, one sending short requests and one long ones, served by a small
// continuous-batching replica (one token per running request per step). Over every interval
// in which both are backlogged, their weighted service differs by at most
// 2 · max(w_p · L_input, w_d · M), M the most tokens the running batch held. FIFO over the same
// arrivals lets the long-request tenant take ever more: its difference grows with the run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Pipeline } from '../pipeline.ts';
import { resolvePolicy } from '../config/policy.ts';
import { SPEC } from '../admission/admission-test-kit.ts';
import type { Ticket } from './ticket.ts';
import type { LlmRequest } from '../request/request.ts';

const SIZES = { short: { input: 100, output: 50 }, long: { input: 1_500, output: 400 } };
const PER_TENANT = 300;
const STEP_MS = 10;

interface Running {
  readonly t: Ticket<string>;
  generated: number;
}

/** Runs both tenants' backlog through one replica; returns the service-difference range. */
function run(order: 'vtc' | 'fifo') {
  const policy = resolvePolicy({
    name: `fair-${order}`,
    policy_revision: `fair-${order}@1`,
    admission: { type: 'admit-all' },
    dispatch: { type: 'flow-control' },
    routing: { type: 'least-request' },
    queueing: { order },
  });
  const spec = { ...SPEC, maxNumSeqs: 16, replicaKvTokens: 20_000 };
  const running: Running[] = [];
  const idle = { index: 0, inFlight: 0, running: 0, waiting: 0, kvUsage: 0 };
  const p = new Pipeline<string>(policy, spec, {
    dispatch: (t) => running.push({ t, generated: 0 }),
    expire: () => assert.fail('nothing expires in a batch-class backlog'),
  });
  // Interleaved arrivals at time 0: FIFO serves the two tenants request for request.
  for (let i = 0; i < PER_TENANT; i++) {
    for (const tenant of ['short', 'long'] as const) {
      const req: LlmRequest = {
        id: `${tenant}-${i}`,
        arrivalMs: 0,
        inputTokens: SIZES[tenant].input,
        outputTokens: SIZES[tenant].output,
        tenant,
        sloClass: 'batch',
      };
      const offer = p.offer(req, req.id, 0, [idle]);
      assert.notEqual(offer.outcome, 'reject');
    }
  }
  const waiting = (tenant: string) => {
    for (const t of p.dispatcher.waitingTickets()) if (t.req.tenant === tenant) return true;
    return false;
  };
  let minDiff = 0;
  let maxDiff = 0;
  let mostTokens = 0;
  for (let now = 0; waiting('short') && waiting('long'); now += STEP_MS) {
    const kvUsed = running.reduce((n, r) => n + r.t.req.inputTokens + r.generated, 0);
    p.pump(now, [
      {
        index: 0,
        inFlight: running.length,
        running: running.length,
        waiting: 0,
        kvUsage: kvUsed / spec.replicaKvTokens,
      },
    ]);
    // One engine step: every running request generates a token (its first after the prefill).
    for (const r of [...running]) {
      if (r.generated++ === 0) p.firstToken(r.t, now - r.t.asked.arrivalMs);
      else p.token(r.t);
      if (r.generated === r.t.req.outputTokens) {
        p.end(r.t, r.generated, true);
        running.splice(running.indexOf(r), 1);
      }
    }
    const held = running.reduce((n, r) => n + r.t.req.inputTokens + r.generated, 0);
    mostTokens = Math.max(mostTokens, held);
    const diff = p.vtc.service('long') - p.vtc.service('short');
    minDiff = Math.min(minDiff, diff);
    maxDiff = Math.max(maxDiff, diff);
  }
  const { inputWeight, outputWeight } = policy.queueing.cost;
  const bound = 2 * Math.max(inputWeight * SIZES.long.input, outputWeight * mostTokens);
  // The largest difference in service gained over any interval is the range of the running
  // difference (the service at both ends of an interval, subtracted).
  return { spread: maxDiff - minDiff, bound };
}

test('VTC keeps two backlogged tenants of different request lengths within 2·max(w_p·L, w_d·M) over every interval', () => {
  const vtc = run('vtc');
  assert.ok(vtc.spread <= vtc.bound, `VTC spread ${vtc.spread} > bound ${vtc.bound}`);
});

test('FIFO over the same arrivals lets the long-request tenant pull away past the bound', () => {
  const fifo = run('fifo');
  assert.ok(fifo.spread > 3 * fifo.bound, `FIFO spread ${fifo.spread} vs bound ${fifo.bound}`);
});
