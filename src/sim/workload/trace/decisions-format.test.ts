// A decision log read as a trace: a last line cut as it was written is skipped, one cut
// anywhere else fails at its place, and arrivals keep the spacing of the gateway's own clock,
// whatever the jitter of each line's write time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadTrace } from './load-trace.ts';
import { tempDir } from '../../../../test/temp-dir.ts';

/** A gateway's decision line: decided `waitMs` after `arrivalMs`, written `lateMs` after that. */
const line = (id: string, arrivalMs: number, lateMs: number, waitMs = 2, degradedTo?: number) =>
  JSON.stringify({
    level: 30,
    time: 1_796_000_000_000 + arrivalMs + waitMs + lateMs,
    request_id: id,
    at_ms: arrivalMs + waitMs,
    tenant: 'acme',
    class: 'interactive',
    asked: { arrival_ms: arrivalMs, input_tokens: 100, max_tokens: 20 },
    admission:
      degradedTo === undefined
        ? { result: 'admit' }
        : { result: 'degrade', degrade_level: 1, degraded_max_tokens: degradedTo },
    msg: 'decision',
  });
const outcome = (id: string, outputTokens = 10) =>
  JSON.stringify({ request_id: id, outcome: { state: 'completed', output_tokens: outputTokens } });

function logOf(...lines: string[]): string {
  const file = join(tempDir('decisions-format'), 'decisions.jsonl');
  writeFileSync(file, lines.join('\n'));
  return file;
}

test('a last line cut as it was written is skipped; one cut before the end fails there', () => {
  const whole = [line('a', 1_000, 0), outcome('a'), line('b', 1_500, 0), outcome('b')];
  const cut = loadTrace(logOf(...whole, line('c', 2_000, 0).slice(0, 60)));
  assert.equal(cut.rows, 2);
  assert.deepEqual(cut.skipped, { cut_last_line: 1 });
  assert.throws(
    () => loadTrace(logOf(whole[0], whole[1], line('c', 2_000, 0).slice(0, 60), ...whole.slice(2))),
    /decisions\.jsonl:3: json: not valid JSON/,
  );
});

test("arrivals keep the gateway clock's spacing, not each line's write time", () => {
  // Written 0 to 8 ms late, in turn: the second arrived 1 ms after the first.
  const t = loadTrace(
    logOf(
      line('a', 1_000, 8),
      outcome('a'),
      line('b', 1_001, 0),
      outcome('b'),
      line('c', 1_010, 4),
      outcome('c'),
    ),
  );
  const at = Array.from(t.tMs);
  assert.deepEqual(
    at.map((ms) => ms - at[0]),
    [0, 1, 10],
  );
});

test('a reply cut at the cap a degraded admission set is not its length: it borrows one', () => {
  const t = loadTrace(
    logOf(line('a', 1_000, 0), outcome('a', 17), line('b', 1_100, 0, 2, 5), outcome('b', 5)),
  );
  assert.deepEqual(Array.from(t.outputTokens), [17, 17]);
});

test('a request of a session replays in it: routing keeps its conversation together', () => {
  const withSession = JSON.stringify({ ...JSON.parse(line('b', 1_100, 0)), session: 'chat-7' });
  const t = loadTrace(logOf(line('a', 1_000, 0), outcome('a'), withSession, outcome('b')));
  assert.deepEqual(
    t.extras?.map((e) => e?.session),
    [undefined, 'chat-7'],
  );
});
