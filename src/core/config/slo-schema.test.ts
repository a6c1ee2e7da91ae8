import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { resolvePolicy } from './policy.ts';
import { isConfigError } from '../errors.ts';

const valid = {
  name: 'p',
  policy_revision: 'r1',
  admission: { type: 'admit-all' },
  routing: { type: 'least-request' },
};

const chat = {
  name: 'chat',
  population: { class: 'interactive', tenant: 'acme' },
  window: '28d',
  objectives: [
    { kind: 'ttft', threshold_ms: 2000, target: 0.99 },
    { kind: 'token_gap', threshold_ms: 80, target: 0.99 },
    { kind: 'success', target: 0.995 },
  ],
};

test('without a slos section each class with objectives gets its SLO, from the resolved classes', () => {
  const p = resolvePolicy({ ...valid, classes: { interactive: { ttft_ms: 500 } } });
  assert.deepEqual(
    p.slos.map((s) => [s.name, s.population.class, s.objectives.map((o) => o.name)]),
    [
      ['interactive', 'interactive', ['success', 'ttft', 'token_gap']],
      ['reasoning', 'reasoning', ['success', 'ttft', 'token_gap', 'e2e']],
      ['batch', 'batch', ['success', 'e2e']],
    ],
  );
  const ttft = p.slos[0].objectives[1];
  assert.ok(ttft.kind === 'ttft' && ttft.thresholdMs === 500 && ttft.target === 0.99);
  assert.equal(p.slos[0].windowMs, 28 * 86_400_000);
  assert.equal(p.slos[0].revision, 'r1');
  assert.ok(p.slos[0].exclusions.includes('client_closed_before_dispatch'));
});

test('an slos section replaces the defaults; `slos: []` has none', () => {
  const p = resolvePolicy({
    ...valid,
    slos: [
      chat,
      { ...chat, name: 'chat_fast', window: '1h', policy_revision: 'r0', exclusions: [] },
    ],
  });
  assert.deepEqual(
    p.slos.map((s) => [s.name, s.windowMs, s.revision, s.exclusions.length]),
    [
      ['chat', 28 * 86_400_000, 'r1', 4],
      ['chat_fast', 3_600_000, 'r0', 0],
    ],
  );
  assert.deepEqual(p.slos[0].population, { class: 'interactive', tenant: 'acme' });
  assert.deepEqual(resolvePolicy({ ...valid, slos: [] }).slos, []);
});

const invalid: Array<[string, unknown, string]> = [
  [
    'a target of 1.5',
    [{ ...chat, objectives: [chat.objectives[0], { kind: 'success', target: 1.5 }] }],
    'slos[0].objectives[1].target: expected a number in (0, 1), got 1.5',
  ],
  [
    'a target of 1',
    [{ ...chat, objectives: [{ kind: 'success', target: 1 }] }],
    'slos[0].objectives[0].target: expected a number in (0, 1), got 1',
  ],
  [
    'a window that is no duration',
    [{ ...chat, window: '4 weeks' }],
    'slos[0].window: expected a duration like 5m, 1h or 28d, got "4 weeks"',
  ],
  [
    'an unknown objective kind',
    [{ ...chat, objectives: [{ kind: 'tpot', threshold_ms: 5, target: 0.9 }] }],
    'slos[0].objectives[0].kind: expected one of success, ttft, token_gap, e2e, got "tpot"',
  ],
  [
    'a latency objective without its threshold',
    [{ ...chat, objectives: [{ kind: 'ttft', target: 0.9 }] }],
    'slos[0].objectives[0].threshold_ms: expected a number, got nothing',
  ],
  [
    'a threshold on success',
    [{ ...chat, objectives: [{ kind: 'success', threshold_ms: 5, target: 0.9 }] }],
    'slos[0].objectives[0]: expected a key among kind, name, target, got "threshold_ms"',
  ],
  [
    'two objectives of one kind, unnamed',
    [{ ...chat, objectives: [chat.objectives[0], chat.objectives[0]] }],
    'slos[0].objectives[1].kind: expected an objective name no other objective of this SLO has (give it a name), got "ttft"',
  ],
  [
    'two SLOs of one name',
    [chat, chat],
    'slos[1].name: expected a name no other SLO has, got "chat"',
  ],
  [
    'a name that is no label',
    [{ ...chat, name: 'Chat SLO' }],
    'slos[0].name: expected a name of lowercase letters, digits and _, got "Chat SLO"',
  ],
  [
    'an unknown exclusion',
    [{ ...chat, exclusions: ['slow_requests'] }],
    'slos[0].exclusions[0]: expected one of client_closed_before_dispatch, client_closed_streaming, client_error, tenant_limits, client_deadline, got "slow_requests"',
  ],
  [
    'an unknown class',
    [{ ...chat, population: { class: 'vip' } }],
    'slos[0].population.class: expected one of interactive, reasoning, batch, best_effort, got "vip"',
  ],
  [
    'no objectives',
    [{ ...chat, objectives: [] }],
    'slos[0].objectives: expected at least 1 entry, got []',
  ],
];

for (const [name, slos, message] of invalid) {
  test(`rejects ${name} naming path and value`, () => {
    assert.throws(
      () => resolvePolicy({ ...valid, slos }),
      (e: unknown) => {
        assert.ok(isConfigError(e));
        assert.equal(e.message.slice(0, message.length), message);
        return true;
      },
    );
  });
}

test('examples/policy.yaml validates, with its SLOs', () => {
  const file = new URL('../../../examples/policy.yaml', import.meta.url);
  const p = resolvePolicy(parse(readFileSync(file, 'utf8')));
  assert.deepEqual(
    p.slos.map((s) => s.name),
    ['interactive', 'acme_batch'],
  );
});
