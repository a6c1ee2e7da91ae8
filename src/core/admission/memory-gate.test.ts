// Tests for checkMemory (memory-gate.ts): KV fit against free memory minus the reserve.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkMemory, type MemoryGateParams } from './memory-gate.ts';
import {
  demand,
  fleet,
  gateInput,
  expectedVerdict,
  type WantVerdict,
} from './admission-test-kit.ts';

/** Reserve: 10% of the 100,000-token replica = 10,000 tokens. */
const MEMORY: MemoryGateParams = {
  reserveRatio: 0.1,
  retryAfterMinMs: 1_000,
  retryAfterMaxMs: 30_000,
};

const memoryCases: {
  name: string;
  kvTokens: number;
  maxFreeKvTokens: number;
  waitMs?: number;
  reserveRatio?: number;
  want: WantVerdict;
}[] = [
  { name: 'plenty free', kvTokens: 1_400, maxFreeKvTokens: 100_000, want: 'pass' },
  { name: 'exactly free − reserve', kvTokens: 50_000, maxFreeKvTokens: 60_000, want: 'pass' },
  {
    name: 'one token over free − reserve: Retry-After from the drain, rounded up',
    kvTokens: 50_001,
    maxFreeKvTokens: 60_000,
    waitMs: 2_340,
    want: { reason: 'kv_capacity', status: 503, retryAfterMs: 2_400 },
  },
  {
    name: 'fits only an empty replica, nothing queued: the minimum',
    kvTokens: 90_000,
    maxFreeKvTokens: 95_000,
    want: { reason: 'kv_capacity', status: 503, retryAfterMs: 1_000 },
  },
  {
    name: 'fits only an empty replica, long queue: the maximum',
    kvTokens: 90_000,
    maxFreeKvTokens: 0,
    waitMs: 120_000,
    want: { reason: 'kv_capacity', status: 503, retryAfterMs: 30_000 },
  },
  {
    name: 'larger than an empty replica − reserve, though all of it is free',
    kvTokens: 90_001,
    maxFreeKvTokens: 100_000,
    want: {
      reason: 'context_length',
      status: 400,
      context: {
        promptTokens: 1_000,
        outputTokens: 89_001,
        limitTokens: 90_000,
        limit: 'kv_cache',
      },
    },
  },
  {
    name: 'too large is the client’s to fix even when nothing is free',
    kvTokens: 200_000,
    maxFreeKvTokens: 0,
    waitMs: 5_000,
    want: {
      reason: 'context_length',
      status: 400,
      context: {
        promptTokens: 1_000,
        outputTokens: 199_000,
        limitTokens: 90_000,
        limit: 'kv_cache',
      },
    },
  },
  {
    name: 'no reserve: the whole replica',
    kvTokens: 100_000,
    maxFreeKvTokens: 100_000,
    reserveRatio: 0,
    want: 'pass',
  },
];

test('memory: a request too large for the spec fits the largest replica, as it reports its cache', () => {
  const input = (largestKvTokens: number, maxFreeKvTokens: number) =>
    gateInput({
      demand: demand({ kvTokens: 150_000 }),
      fleet: fleet({ largestKvTokens, maxFreeKvTokens }),
    });
  assert.equal(checkMemory(input(100_000, 100_000), MEMORY).pass, false);
  assert.deepEqual(checkMemory(input(400_000, 200_000), MEMORY), { pass: true });
  // Its reserve is the largest replica's: 40,000 of 400,000.
  const short = checkMemory(input(400_000, 189_999), MEMORY);
  assert.ok(!short.pass && short.reason === 'kv_capacity' && short.status === 503);
});

for (const c of memoryCases) {
  test(`memory: ${c.name}`, () => {
    const input = gateInput({
      demand: demand({ kvTokens: c.kvTokens }),
      fleet: fleet({
        maxFreeKvTokens: c.maxFreeKvTokens,
        wait: { requests: 1, waitMs: c.waitMs ?? 0 },
      }),
    });
    const params = { ...MEMORY, reserveRatio: c.reserveRatio ?? MEMORY.reserveRatio };
    assert.deepEqual(checkMemory(input, params), expectedVerdict(c.want), c.name);
  });
}
