// A policy named on the command line, as a user meets a bad one: refused by the flag or argument
// that gave it, with what was wrong, before anything else is printed (exit 2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runGoodput } from './gateway/process-kit.ts';
import { tempDir } from './temp-dir.ts';
import { loadPolicy } from '../src/sim/policy-source.ts';
import { resolvePolicy } from '../src/core/config/policy.ts';

const dir = tempDir('policy-flags');
const missing = join(dir, 'nonexist.yaml');
const PRESETS = 'a preset \\(baseline-vllm, least-request, goodput\\)';

function refusal(by: string, value: string, why: string): RegExp {
  const path = value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(
    `^goodput: ${by}: expected ${PRESETS} or a readable policy file \\(${why}\\), got "${path}"\n$`,
  );
}

test('a policy that is neither a preset nor a readable file is refused by its flag, with why', async () => {
  const folder = join(dir, 'a-folder');
  mkdirSync(folder);
  const runs: [string[], RegExp][] = [
    [['serve', '--port', '0', '--policy', missing], refusal('--policy', missing, 'no such file')],
    [['simulate', '--policy', missing], refusal('--policy', missing, 'no such file')],
    [['simulate', '--policy', 'fastest'], refusal('--policy', 'fastest', 'no such file')],
    [['policy', 'check', missing], refusal('<file>', missing, 'no such file')],
    [
      ['simulate', '--policy', folder],
      refusal('--policy', folder, 'EISDIR: illegal operation on a directory'),
    ],
  ];
  const results = await Promise.all(runs.map(([args]) => runGoodput(args)));
  results.forEach((r, i) => {
    assert.equal(r.code, 2, r.out);
    assert.match(r.out, runs[i][1]);
  });
});

test('policy check: a bad --running or --served-models is the only line printed', async () => {
  const running = await runGoodput([
    'policy',
    'check',
    'examples/policy.yaml',
    '--running',
    missing,
  ]);
  assert.equal(running.code, 2, running.out);
  assert.match(running.out, refusal('--running', missing, 'no such file'));

  const cases = [
    ['', /^goodput: --served-models: expected model names, comma-separated, none empty, got ""\n$/],
    [
      'llama-3-8b,,sql-lora',
      /^goodput: --served-models: expected .*, got "llama-3-8b,,sql-lora"\n$/,
    ],
  ] as const;
  for (const [list, message] of cases) {
    const served = await runGoodput([
      'policy',
      'check',
      'examples/policy.yaml',
      '--served-models',
      list,
    ]);
    assert.equal(served.code, 2, served.out);
    assert.match(served.out, message);
  }
});

test('an unknown key in a policy file is named, with the keys its map takes, not the document', async () => {
  const example = readFileSync('examples/policy.yaml', 'utf8');
  const file = join(dir, 'typo.yaml');
  const runs: [string, RegExp][] = [
    [
      `${example}\nadmision: { type: goodput }\n`,
      /typo\.yaml: \(root\): expected a key among name, policy_revision, description, admission, .*, engine, got "admision"\n$/,
    ],
    [
      example.replace('  type: goodput # or admit-all', '  type: goodput\n  gate: []'),
      /typo\.yaml: admission: expected a key among type, gates, retry_after, got "gate"\n$/,
    ],
    [
      example.replace('reserve_ratio: 0.05', 'reserve: 0.05'),
      /typo\.yaml: admission\.gates\[2\]\.params: expected a key among reserve_ratio, got "reserve"\n$/,
    ],
  ];
  for (const [doc, message] of runs) {
    writeFileSync(file, doc);
    const r = await runGoodput(['policy', 'check', file]);
    assert.equal(r.code, 2, r.out);
    assert.match(r.out, message);
  }
});

test('an empty policy file (or one of comments alone) is said to be empty', async () => {
  for (const text of ['', '# nothing yet\n']) {
    const file = join(dir, `empty-${text.length}.yaml`);
    writeFileSync(file, text);
    const r = await runGoodput(['policy', 'check', file]);
    assert.equal(r.code, 2, r.out);
    assert.match(
      r.out,
      /: expected a policy document \(name, admission, routing, …\), got "an empty file"/,
    );
  }
});

test("the example policy's classes are the defaults it says they are", () => {
  const example = loadPolicy('examples/policy.yaml');
  const minimal = resolvePolicy({
    name: 'm',
    policy_revision: 'm@1',
    admission: { type: 'goodput' },
    routing: { type: 'expected-completion' },
  });
  // As the file says them: a key left unset and one absent are alike.
  const said = (v: unknown) => JSON.parse(JSON.stringify(v)) as unknown;
  assert.deepEqual(said(example.classes), said(minimal.classes));
});
