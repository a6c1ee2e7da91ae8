import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LlmRequest } from '../core/request/request.ts';
import { VirtualClock } from '../runtime/virtual-clock.ts';
import type { CallRecord } from './call-record.ts';
import { runOpenLoop } from './open-loop.ts';

function request(id: string, arrivalMs: number): LlmRequest {
  return { id, arrivalMs, inputTokens: 10, outputTokens: 5, tenant: 't', sloClass: 'interactive' };
}

/** Runs the loop on a virtual clock, each call answering `latencyMs` after it is sent. */
async function drive(
  arrivals: number[],
  latencyMs: number,
  maxConcurrency?: number,
  stopAtMs?: number,
) {
  const clock = new VirtualClock();
  const stop = new AbortController();
  if (stopAtMs !== undefined) clock.at(stopAtMs, () => stop.abort());
  const reqs = arrivals.map((t, i) => request(`r${i + 1}`, t));
  const send = (req: LlmRequest, dueMs: number) =>
    new Promise<CallRecord>((resolve) => {
      const sentMs = clock.now();
      clock.at(sentMs + latencyMs, () =>
        resolve({
          id: req.id,
          tenant: req.tenant,
          sloClass: req.sloClass,
          dueMs,
          sentMs,
          endMs: clock.now(),
          ok: true,
          status: 200,
          tokenTimesMs: [clock.now()],
          promptTokens: 10,
          outputTokens: 1,
        }),
      );
    });
  let settled = false;
  const run = runOpenLoop(reqs, send, { clock, timers: clock, maxConcurrency, stop: stop.signal });
  void run.then(() => (settled = true));
  // Promise callbacks run between virtual milliseconds, as they would between real events.
  for (let t = 0; !settled && t < 100_000; t++) {
    clock.run(t);
    for (let i = 0; i < 10; i++) await null;
  }
  return await run;
}

test('open loop: each request goes when due, whatever is still in flight', async () => {
  const run = await drive([0, 100, 100, 250, 1000], 300);
  const sent = Object.fromEntries(run.records.map((r) => [r.id, r.sentMs]));
  assert.deepEqual(sent, { r1: 0, r2: 100, r3: 100, r4: 250, r5: 1000 });
  assert.equal(run.endMs, 1300);
});

test('open loop: a concurrency cap holds due requests in arrival order; the lag shows', async () => {
  const run = await drive([0, 100, 100, 250, 1000], 300, 2);
  const byId = Object.fromEntries(run.records.map((r) => [r.id, r]));
  assert.deepEqual(
    ['r1', 'r2', 'r3', 'r4', 'r5'].map((id) => [byId[id].dueMs, byId[id].sentMs]),
    [
      [0, 0],
      [100, 100],
      [100, 300],
      [250, 400],
      [1000, 1000],
    ],
  );
});

test('open loop: everything at time 0 (rate inf) is sent in one wake-up', async () => {
  const run = await drive(new Array<number>(500).fill(0), 50);
  assert.equal(run.records.length, 500);
  assert.ok(run.records.every((r) => r.sentMs === 0 && r.endMs === 50));
});

test('open loop: stopped, nothing more is sent, held requests included; it ends with what was sent', async () => {
  const run = await drive([0, 100, 100, 200, 300], 300, 2, 150);
  assert.deepEqual(
    run.records.map((r) => [r.id, r.sentMs]),
    [
      ['r1', 0],
      ['r2', 100],
    ],
  );
  assert.equal(run.endMs, 400);
});
