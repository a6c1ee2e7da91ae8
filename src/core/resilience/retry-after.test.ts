import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRetryAfter } from './retry-after.ts';

const DATE = 'Mon, 07 Dec 2026 12:00:00 GMT';

test('delta-seconds is a wait in seconds; a fraction is kept', () => {
  assert.equal(parseRetryAfter('7'), 7_000);
  assert.equal(parseRetryAfter(' 0 '), 0);
  assert.equal(parseRetryAfter('1.5'), 1_500);
});

test("an HTTP-date is read against the response's own Date header, not the local clock", () => {
  assert.equal(parseRetryAfter('Mon, 07 Dec 2026 12:00:30 GMT', DATE, 0), 30_000);
  // The obsolete forms (RFC 850, asctime) are HTTP-dates too.
  assert.equal(parseRetryAfter('Monday, 07-Dec-26 12:00:05 GMT', DATE), 5_000);
  assert.equal(parseRetryAfter('Mon Dec  7 12:00:02 2026', DATE), 2_000);
});

test("without a Date header, a date is read against the caller's epoch, or not at all", () => {
  const now = Date.parse(DATE);
  assert.equal(parseRetryAfter('Mon, 07 Dec 2026 12:01:00 GMT', null, now), 60_000);
  assert.equal(parseRetryAfter('Mon, 07 Dec 2026 12:01:00 GMT'), undefined);
});

test('a date already past waits 0; anything else is no Retry-After', () => {
  assert.equal(parseRetryAfter('Mon, 07 Dec 2026 11:00:00 GMT', DATE), 0);
  for (const v of [undefined, null, '', '-1', 'soon', '1e3', 'Mon, 99 Foo 2026', '12:00']) {
    assert.equal(parseRetryAfter(v, DATE), undefined, String(v));
  }
});
