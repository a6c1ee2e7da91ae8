import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { isInputError } from '../../../core/errors.ts';
import { detectTraceFormat } from './formats.ts';
import { loadTrace } from './load-trace.ts';
import { scratch } from './test-fixtures.ts';

const tmp = scratch('goodput-decisions-');
after(tmp.cleanup);

type Asked = {
  arrival_ms: number;
  input_tokens: number | null;
  max_tokens?: number | null;
  timeout_ms?: number | null;
};

/** A decision record as the gateway writes it (pino's envelope), reduced to what is read. */
function decision(id: string, asked: Asked | null, more: Record<string, unknown> = {}) {
  return JSON.stringify({
    level: 30,
    msg: 'decision',
    request_id: id,
    tenant: 'acme',
    class: 'interactive',
    policy_revision: 'goodput@1',
    at_ms: asked?.arrival_ms ?? 0,
    asked: asked === null ? null : { max_tokens: null, timeout_ms: null, ...asked },
    admission: { result: 'admit' },
    ...more,
  });
}

function outcome(id: string, state: string, outputTokens: number) {
  return JSON.stringify({
    msg: 'outcome',
    request_id: id,
    tenant: 'acme',
    class: 'interactive',
    at_ms: 0,
    outcome: { state, output_tokens: outputTokens },
  });
}

const load = (name: string, lines: string[]) => loadTrace(tmp.file(name, lines.join('\n')));

test("a decision log is detected, the gateway's and the simulator's, by its first record", () => {
  assert.equal(
    detectTraceFormat(decision('a', { arrival_ms: 0, input_tokens: 5 }))?.name,
    'decisions',
  );
  assert.equal(detectTraceFormat(outcome('a', 'completed', 3))?.name, 'decisions');
  const reload = JSON.stringify({ msg: 'policy_reload', from: 'goodput@1', to: 'goodput@2' });
  assert.equal(detectTraceFormat(reload)?.name, 'decisions');
  const sim = JSON.parse(decision('a', { arrival_ms: 0, input_tokens: 5 })) as Record<
    string,
    unknown
  >;
  delete sim.msg;
  delete sim.level;
  assert.equal(detectTraceFormat(JSON.stringify(sim))?.name, 'decisions');
});

test('each request once, at its first record: arrival, prompt, tenant, class, limit, deadline, choices', () => {
  const t = load('asked.jsonl', [
    decision('a', { arrival_ms: 1_000, input_tokens: 300, max_tokens: 50, timeout_ms: 9_000 }),
    JSON.stringify({ msg: 'policy_reload', from: 'goodput@1', to: 'goodput@2' }),
    decision('b', { arrival_ms: 1_500, input_tokens: 40 }, { choices: 3, class: 'batch' }),
    // A later attempt of a, and the record of its stream cut: a is told by its first.
    decision('a', { arrival_ms: 1_000, input_tokens: 999 }),
    outcome('a', 'completed', 20),
    outcome('b', 'completed', 90),
  ]);
  assert.equal(t.format, 'decisions');
  assert.equal(t.rows, 2);
  assert.deepEqual([...t.tMs], [0, 500]);
  assert.deepEqual([...t.inputTokens], [300, 40]);
  // b's three choices streamed 90 tokens: 30 each.
  assert.deepEqual([...t.outputTokens], [20, 30]);
  assert.deepEqual(t.extras, [
    { tenant: 'acme', sloClass: 'interactive', maxTokens: 50, timeoutMs: 9_000 },
    { tenant: 'acme', sloClass: 'batch', choices: 3 },
  ]);
});

test('a request not served to its end takes the reply of a completed one like it, in turn, within its max_tokens', () => {
  const other = { tenant: 'zeta' };
  const t = load('borrowed.jsonl', [
    decision('c1', { arrival_ms: 0, input_tokens: 10 }),
    outcome('c1', 'completed', 100),
    decision('c2', { arrival_ms: 1, input_tokens: 10 }),
    outcome('c2', 'completed', 200),
    decision('z1', { arrival_ms: 2, input_tokens: 10 }, other),
    outcome('z1', 'completed', 7),
    // Refused, cut, and refused with a limit: acme's completed replies, in turn.
    decision('r1', { arrival_ms: 3, input_tokens: 10 }, { admission: { result: 'reject' } }),
    decision('r2', { arrival_ms: 4, input_tokens: 10 }),
    outcome('r2', 'cancelled', 3),
    decision('r3', { arrival_ms: 5, input_tokens: 10, max_tokens: 150 }),
    // Of a class no request of which completed: any completed request's, in turn.
    decision('b1', { arrival_ms: 6, input_tokens: 10 }, { class: 'batch' }),
  ]);
  assert.deepEqual([...t.outputTokens], [100, 200, 7, 100, 200, 100, 100]);
});

test("a request refused before its body was read takes its prompt's size from the same request as its reply", () => {
  const t = load('unread.jsonl', [
    decision('a', { arrival_ms: 0, input_tokens: 700 }),
    outcome('a', 'completed', 80),
    decision('u', { arrival_ms: 10, input_tokens: null }, { admission: { result: 'reject' } }),
  ]);
  assert.deepEqual([...t.inputTokens], [700, 700]);
  assert.deepEqual([...t.outputTokens], [80, 80]);
});

test('a record of no request (asked: null) is skipped as unread and counted', () => {
  const t = load('skipped.jsonl', [
    decision('a', { arrival_ms: 0, input_tokens: 5 }),
    outcome('a', 'completed', 4),
    decision('x', null, { class: null, admission: { result: 'reject' } }),
  ]);
  assert.equal(t.rows, 1);
  assert.deepEqual(t.skipped, { unread: 1 });
  assert.equal(t.rowsRead, 2);
});

test('what cannot be replayed is an InputError naming the file, line and field', () => {
  const cases: [string[], RegExp][] = [
    [
      [decision('a', { arrival_ms: 0, input_tokens: 5 })],
      /no request in this log was served to its end/,
    ],
    [
      [JSON.stringify({ request_id: 'a', tenant: 't', class: 'batch', admission: {} })],
      /:1: asked: missing field/,
    ],
    [
      [decision('a', { arrival_ms: -1, input_tokens: 5 })],
      /:1: asked\.arrival_ms: expected a time/,
    ],
    [
      [decision('a', { arrival_ms: 0, input_tokens: 5 }, { class: 'gold' })],
      /:1: class: unknown class "gold"/,
    ],
    [
      [decision('a', { arrival_ms: 0, input_tokens: 5 }), outcome('a', 'completed', -2)],
      /:2: outcome\.output_tokens/,
    ],
  ];
  cases.forEach(([lines, message], i) => {
    assert.throws(
      () => load(`bad-${i}.jsonl`, lines),
      (e: unknown) => isInputError(e) && message.test(e.message),
      String(message),
    );
  });
});

test("a gateway's log that two runs appended to replays each run where it happened, not both from 0", () => {
  // Each run's arrival_ms is on its own process's clock; `time` (Unix ms) is when it decided.
  const run = (id: string, arrivalMs: number, atMs: number, time: number) => [
    decision(id, { arrival_ms: arrivalMs, input_tokens: 5 }, { at_ms: atMs, time }),
    outcome(id, 'completed', 3),
  ];
  const t = load('appended.jsonl', [
    ...run('a', 400, 500, 1_796_000_000_000),
    ...run('b', 900, 950, 1_796_000_000_500),
    // The gateway restarted 10 s later: its clock starts again near 0.
    ...run('c', 50, 100, 1_796_000_010_000),
  ]);
  assert.deepEqual([...t.tMs], [0, 550, 9_950 + 100]);
});
