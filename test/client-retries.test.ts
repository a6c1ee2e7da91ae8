// Simulated clients keep their half of the contract: an attempt that times out before its
// first token is cancelled and retried (with backoff); one that already streamed tokens is
// cancelled and never retried; a refusal that says no retry can succeed is believed; every
// attempt is counted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './helpers.ts';
import { tempDir } from './temp-dir.ts';

const constant = { profile: 'const:step_ms=10', input: 'fixed:16', replicas: 1 };

test('a stream that produced tokens is cancelled at its timeout, never retried', () => {
  // 100 tokens take 1 s; the client gives up after 0.5 s, mid-stream.
  const r = run({
    ...constant,
    output: 'fixed:100',
    rate: 0.5,
    numRequests: 50,
    clientTimeoutMs: 500,
    maxAttempts: 3,
  });
  assert.equal(r.cancelled, 50);
  assert.equal(r.client.timeouts, 50);
  assert.equal(r.client.retries, 0);
  assert.equal(r.client.retry_amplification, 1);
  assert.equal(r.engine.kv_used_blocks_at_end, 0);
  assert.equal(r.latency_ms.itl.count, 0, "cancelled requests' gaps are not pooled");
});

test('an attempt stuck in the queue times out, is cancelled and retried', () => {
  // One sequence at a time, 200 ms each, 10 req/s offered: the queue grows and waits exceed 1 s.
  const r = run({
    ...constant,
    output: 'fixed:20',
    maxNumSeqs: 1,
    rate: 10,
    numRequests: 300,
    clientTimeoutMs: 1_000,
    maxAttempts: 3,
    backoffBaseMs: 100,
    backoffCapMs: 1_000,
  });
  assert.ok(r.client.retries > 0);
  assert.ok(r.client.attempts > r.offered.requests);
  assert.equal(
    r.client.retry_amplification,
    Math.round((r.client.attempts / r.offered.requests) * 1e6) / 1e6,
  );
  assert.equal(r.completed + r.cancelled, r.offered.requests);
  assert.ok(r.completed > 0 && r.cancelled > 0);
});

test('without a timeout nothing is cancelled or retried', () => {
  const r = run({
    ...constant,
    output: 'fixed:20',
    maxNumSeqs: 1,
    rate: 10,
    numRequests: 100,
    maxAttempts: 3,
  });
  assert.equal(r.completed, 100);
  assert.equal(r.client.attempts, 100);
});

test("a refusal no retry can undo (its Retry-After past the client's deadline): disciplined clients stop", () => {
  const dir = tempDir('final');
  // 40 requests at once, each 1 s of decoding on one replica: the deadline gate refuses what the
  // replica cannot finish by the client's deadline, with a Retry-After of at least 500 ms.
  const trace = (timeoutMs: number) => {
    const file = join(dir, `t${timeoutMs}.jsonl`);
    const row = { t_ms: 0, input_tokens: 16, output_tokens: 100, timeout_ms: timeoutMs };
    writeFileSync(file, `${JSON.stringify(row)}\n`.repeat(40));
    return file;
  };
  const spec = { ...constant, maxNumSeqs: 4, classes: 'interactive', maxAttempts: 3 };
  // 400 ms: a retry 500 ms later would find its deadline passed — final, never retried.
  const near = run({ ...spec, trace: trace(400) }, 'goodput');
  assert.equal(near.admission.rejected, 40);
  assert.equal(near.client.retries, 0);
  assert.equal(near.client.retry_amplification, 1);
  // 5 s: the same refusals' Retry-After falls inside the deadline, and the clients come back.
  const far = run({ ...spec, trace: trace(5_000) }, 'goodput');
  assert.ok(far.client.retries > 0, 'retried');
  assert.ok(far.completed > 0);
  // A bad deadline is refused naming the line and the field.
  const bad = join(dir, 'bad.jsonl');
  writeFileSync(
    bad,
    `${JSON.stringify({ t_ms: 0, input_tokens: 5, output_tokens: 5, timeout_ms: 0 })}\n`,
  );
  assert.throws(
    () => run({ trace: bad }),
    /bad\.jsonl:1: timeout_ms: expected milliseconds above 0, got 0/,
  );
});

test("a request still running at its client's deadline is cut there, failed, as the gateway cuts it: never good", () => {
  const dir = tempDir('cut');
  const file = join(dir, 'late.jsonl');
  // 10 tokens of 30 ms decode steps (a slowdown the control plane is not told of) after a 300 ms
  // prefill: done at about 600 ms, past its 350 ms deadline.
  const row = { t_ms: 0, input_tokens: 100, output_tokens: 10, max_tokens: 10, timeout_ms: 350 };
  writeFileSync(file, `${JSON.stringify(row)}\n`);
  for (const policy of ['baseline-vllm', 'goodput']) {
    const r = run(
      {
        trace: file,
        profile: 'const:prefill_ms_per_token=1,decode_step_ms=10',
        slowdown: 3,
      },
      policy,
    );
    assert.equal(r.completed, 0, policy);
    assert.equal(r.slo.attainment_offered, 0, policy);
  }
  // Cut mid-stream, about 25 tokens in: the gaps it streamed are no completed request's, and
  // none is in the pooled ITL.
  const long = { ...row, output_tokens: 100, max_tokens: 100 };
  writeFileSync(file, `${JSON.stringify(long)}\n`);
  const cut = run({ trace: file, profile: 'const:prefill_ms_per_token=1,decode_step_ms=10' });
  assert.equal(cut.completed, 0);
  assert.equal(cut.latency_ms.itl.count, 0);
  // Within its deadline it is served, and good.
  writeFileSync(file, `${JSON.stringify({ ...row, timeout_ms: 5_000 })}\n`);
  assert.equal(
    run({ trace: file, profile: 'const:prefill_ms_per_token=1,decode_step_ms=10' }).completed,
    1,
  );
});
