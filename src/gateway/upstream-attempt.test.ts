import assert from 'node:assert/strict';
import test from 'node:test';
import type { Ticket } from '../core/queueing/ticket.ts';
import {
  SILENT_MIN_MS,
  SILENT_UNPREDICTED_MS,
  silentLimitMs,
  upstreamCall,
} from './upstream-attempt.ts';

/** A dispatched ticket staged in pieces of 1,024 planned tokens, 512 of them cached. */
function staged(inputTokens: number, estimated?: number): Ticket<unknown> {
  const promptEstimate =
    estimated === undefined ? undefined : { tokens: estimated, script: 'latin' };
  return {
    req: { id: 'r', inputTokens, promptEstimate },
    entry: { pieceTokens: 1024 },
    hitTokens: 512,
  } as unknown as Ticket<unknown>;
}

const signal = new AbortController().signal;

test("a staged prompt's cuts are the plan's tokens as the estimate measures them", () => {
  const call = upstreamCall(staged(2000, 4000), 'chat', {}, signal);
  // Planned at half its estimate: each planned token is two of the estimate's.
  assert.deepEqual(call.staged, { pieceTokens: 2048, cachedTokens: 1024, promptTokens: 4000 });
  const asEstimated = upstreamCall(staged(4000, 4000), 'chat', {}, signal);
  assert.deepEqual(asEstimated.staged, {
    pieceTokens: 1024,
    cachedTokens: 512,
    promptTokens: 4000,
  });
  const counted = upstreamCall(staged(3000), 'completion', {}, signal);
  assert.deepEqual(counted.staged, { pieceTokens: 1024, cachedTokens: 512, promptTokens: 3000 });
});

test("a backend's silence is its fault past ten times the first token predicted once dispatched, at least a second", () => {
  const admitted = (predictedTtftMs: number, waitMs: number) =>
    ({
      decision: { outcome: 'admit', assessment: { predictedTtftMs, waitMs } },
    }) as unknown as Ticket<unknown>;
  // 300 ms predicted, 100 of them in the queue: 200 ms on the backend, 2 s of silence.
  assert.equal(silentLimitMs(admitted(300, 100)), 2_000);
  assert.equal(silentLimitMs(admitted(50, 0)), SILENT_MIN_MS);
  // A 100K-token prompt's 12 s prefill: 2 minutes.
  assert.equal(silentLimitMs(admitted(12_500, 500)), 120_000);
  const unassessed = { decision: { outcome: 'admit' } } as unknown as Ticket<unknown>;
  assert.equal(silentLimitMs(unassessed), SILENT_UNPREDICTED_MS);
});
