import assert from 'node:assert/strict';
import test from 'node:test';
import type { Ticket } from '../core/queueing/ticket.ts';
import { upstreamCall } from './upstream-attempt.ts';

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
