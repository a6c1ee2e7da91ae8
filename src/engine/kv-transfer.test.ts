import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MODELS } from './hardware.ts';
import { DEFAULT_KV_LINK, checkKvLink, kvTransferMs } from './kv-transfer.ts';

test('a transfer is its set-up plus the KV bytes over the per-GPU links, shards in parallel', () => {
  const llama8b = MODELS['llama-3-8b'];
  // 2,000 tokens × 128 KiB at 400 Gb/s (50 MB/ms): 5.24 ms, plus 2 ms.
  assert.equal(Math.round(kvTransferMs(2_000, llama8b, 1, DEFAULT_KV_LINK) * 100) / 100, 7.24);
  // Four GPUs move a quarter each at once.
  const tp4 = kvTransferMs(2_000, llama8b, 4, DEFAULT_KV_LINK);
  assert.equal(Math.round(tp4 * 100) / 100, 3.31);
  assert.equal(kvTransferMs(0, llama8b, 1, DEFAULT_KV_LINK), DEFAULT_KV_LINK.setupMs);
});

test('a link is checked: bandwidth positive, set-up not negative, each named', () => {
  assert.throws(() => checkKvLink({ gbps: 0, setupMs: 2 }), /kvLink\.gbps.*got 0/);
  assert.throws(() => checkKvLink({ gbps: 400, setupMs: -1 }), /kvLink\.setupMs/);
  assert.deepEqual(checkKvLink(DEFAULT_KV_LINK), DEFAULT_KV_LINK);
});
