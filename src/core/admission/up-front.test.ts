import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Rejection } from '../request/decision.ts';
import { OUT_OF_REACH, deadlineOutOfReach, finalRefusal } from './up-front.ts';

const MARGIN = 50;
const refused = (retryAfterMs?: number): Rejection => ({
  outcome: 'reject',
  status: 503,
  reason: 'deadline',
  ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
});

test('a deadline is out of reach once it is within the margin of now', () => {
  assert.equal(deadlineOutOfReach(undefined, 1_000, MARGIN), undefined);
  assert.equal(deadlineOutOfReach(1_051, 1_000, MARGIN), undefined);
  assert.equal(deadlineOutOfReach(1_050, 1_000, MARGIN), OUT_OF_REACH);
  assert.equal(OUT_OF_REACH.final, true, 'a 504 is never worth retrying');
});

test('a refusal is final when its Retry-After would bring it back with its deadline out of reach', () => {
  const now = 10_000;
  // Without a client deadline, or with one the retry still meets: told as decided.
  const r = refused(500);
  assert.equal(finalRefusal(r, undefined, now, MARGIN), r);
  assert.equal(finalRefusal(r, now + 500 + MARGIN + 1, now, MARGIN), r);
  // The retry would arrive with its deadline inside the margin: no Retry-After, final.
  for (const deadline of [now + 500 + MARGIN, now + 300, now - 1]) {
    const told = finalRefusal(r, deadline, now, MARGIN);
    assert.deepEqual(told, { outcome: 'reject', status: 503, reason: 'deadline', final: true });
    assert.equal('retryAfterMs' in told, false);
  }
  // A refusal with no Retry-After says nothing of retries; one already final stays as it is.
  const none = refused();
  assert.equal(finalRefusal(none, now, now, MARGIN), none);
  assert.equal(finalRefusal(OUT_OF_REACH, now + 10_000, now, MARGIN), OUT_OF_REACH);
});
