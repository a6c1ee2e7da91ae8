// VTC's fairness bound, through the pipeline the simulator and the gateway share: two tenants,
// both continuously backlogged, one sending short requests and one long ones, served by a small
// continuous-batching replica (one token per running request per step). Over every interval
// in which both are backlogged, their weighted service differs by at most
// 2 · max(w_p · L_input, w_d · M), M the most tokens the running batch held. FIFO over the same
// arrivals lets the long-request tenant take ever more: its difference grows with the run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { replicaLoop } from './queueing-test-kit.ts';

const SIZES = { short: { input: 100, output: 50 }, long: { input: 1_500, output: 400 } };
const PER_TENANT = 300;

/** Runs both tenants' backlog through one replica; returns the service-difference range. */
function run(order: 'vtc' | 'fifo') {
  const loop = replicaLoop({ queueing: { order } });
  const { p } = loop;
  // Interleaved arrivals at time 0: FIFO serves the two tenants request for request.
  for (let i = 0; i < PER_TENANT; i++) {
    for (const tenant of ['short', 'long'] as const) {
      loop.offer({
        id: `${tenant}-${i}`,
        inputTokens: SIZES[tenant].input,
        outputTokens: SIZES[tenant].output,
        tenant,
        sloClass: 'batch',
      });
    }
  }
  const waiting = (tenant: string) => {
    for (const t of p.dispatcher.waitingTickets()) if (t.req.tenant === tenant) return true;
    return false;
  };
  let minDiff = 0;
  let maxDiff = 0;
  let mostTokens = 0;
  while (waiting('short') && waiting('long')) {
    loop.step();
    mostTokens = Math.max(mostTokens, loop.heldTokens);
    const diff = p.vtc.service('long') - p.vtc.service('short');
    minDiff = Math.min(minDiff, diff);
    maxDiff = Math.max(maxDiff, diff);
  }
  const { inputWeight, outputWeight } = p.policy.queueing.cost;
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

test('with a KV term, a tenant is charged for the cache its requests hold while they stream', () => {
  const charged = (kv: number) => {
    const loop = replicaLoop({ queueing: { cost: { kv_gib_second_weight: kv } } });
    loop.offer({ id: 'a', inputTokens: 4_000, outputTokens: 100, tenant: 'a', sloClass: 'batch' });
    while (loop.p.vtc.service('a') === 0 || loop.dispatched[0].state !== 'ended') loop.step();
    return loop.p.vtc.service('a');
  };
  const tokensOnly = charged(0);
  assert.equal(tokensOnly, 4_000 + 2 * 100);
  // Its 100 tokens come 10 ms apart: ~0.99 s holding ~4,050 tokens of 1,000 bytes each.
  const withKv = charged(1_000_000);
  assert.ok(withKv > tokensOnly, `${withKv} vs ${tokensOnly}`);
  const gibSeconds = (withKv - tokensOnly) / 1_000_000;
  const expected = (4_050 * 1_000 * 0.99) / 2 ** 30;
  assert.ok(Math.abs(gibSeconds - expected) / expected < 0.05, `${gibSeconds} GiB-s`);
});
