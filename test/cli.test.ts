// The command line as a user meets it: real processes, real files, real exit codes — the
// simulator's and the policy file's flags, help and version.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { dir, goodput, simulated } from './cli-kit.ts';

test('simulate writes a report with every required key and prints a summary', () => {
  const out = join(dir, 'report.json');
  const r = goodput(
    'simulate',
    '--num-requests',
    '200',
    '--rate',
    '20',
    '--replicas',
    '2',
    '--seed',
    '5',
    '--out',
    out,
  );
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /SLO attainment \(offered\)/);
  const report = JSON.parse(readFileSync(out, 'utf8'));
  assert.equal(report.seed, 5);
  assert.equal(report.offered.requests, 200);
  const check = join(process.cwd(), '..', 'shared', 'checks', 'check-report.mjs');
  if (existsSync(check)) {
    const c = spawnSync(process.execPath, [check, out], { encoding: 'utf8' });
    assert.equal(c.status, 0, c.stdout + c.stderr);
  }
});

test('simulate prints a dash for a latency nothing measured, not 0.0 ms', () => {
  // One-token replies: no token gap to measure.
  const r = goodput('simulate', '--num-requests', '5', '--rate', '5', '--output', 'fixed:1');
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /TPOT p50 \/ p99 +— \/ —\n/);
  assert.match(r.out, /ITL p50 \/ p99 +— \/ —\n/);
  assert.match(r.out, /TTFT p50 \/ p99 +\d+\.\d ms \/ \d+\.\d ms\n/);
});

test('compare runs every policy on the same workload', () => {
  const r = goodput(
    'compare',
    '--policies',
    'baseline-vllm,least-request',
    '--num-requests',
    '150',
    '--rate',
    '30',
    '--replicas',
    '3',
  );
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /baseline-vllm\s+least-request/);
});

test('where its compile cache cannot be kept, goodput runs as it would without', () => {
  // A temporary directory that is a file: no cache directory can be made under it.
  const file = join(dir, 'not-a-dir');
  writeFileSync(file, '');
  const r = spawnSync(process.execPath, ['bin/goodput.js', '--help'], {
    encoding: 'utf8',
    env: { ...process.env, TMPDIR: file, NODE_COMPILE_CACHE: undefined },
    timeout: 60_000,
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /simulate[\s\S]*compare/);
});

test('help documents every command and flag', () => {
  assert.match(goodput('--help').out, /simulate[\s\S]*compare/);
  const help = goodput('simulate', '--help').out;
  for (const flag of [
    '--trace',
    '--arrival',
    '--rate',
    '--burstiness',
    '--num-requests',
    '--input',
    '--output',
    '--model',
    '--gpu',
    '--tp',
    '--replicas',
    '--policy',
    '--seed',
    '--rate-scale',
    '--start',
    '--duration',
    '--max-num-seqs',
    '--max-num-batched-tokens',
    '--profile',
    '--out',
    '--tenants',
    '--classes',
  ]) {
    assert.ok(help.includes(flag), `simulate --help lacks ${flag}`);
  }
});

test('simulate --rate inf sends every request at once; --arrival gamma re-times a trace', () => {
  const burst = join(dir, 'burst.json');
  const b = goodput(
    'simulate',
    '--policy',
    'goodput',
    '--rate',
    'inf',
    '--num-requests',
    '40',
    '--replicas',
    '2',
    '--out',
    burst,
  );
  assert.equal(b.code, 0, b.err);
  const br = JSON.parse(readFileSync(burst, 'utf8'));
  assert.equal(br.offered.requests, 40);
  assert.equal(br.scenario.workload.durationS, 0, 'all 40 at time 0');
  const retimed = join(dir, 'retimed.json');
  const trace = 'test/fixtures/traces/azure-conv-200.csv';
  const t = goodput(
    'simulate',
    '--trace',
    trace,
    '--arrival',
    'gamma',
    '--burstiness',
    '0.2',
    '--out',
    retimed,
  );
  assert.equal(t.code, 0, t.err);
  const tr = JSON.parse(readFileSync(retimed, 'utf8'));
  assert.equal(tr.offered.requests, 200);
  assert.deepEqual(tr.scenario.workload.retimed, { arrival: 'gamma', burstiness: 0.2 });
});

const bad: Array<[string, string[], RegExp]> = [
  ['unknown flag', ['simulate', '--sped', '3'], /unknown option '--sped'/],
  [
    'bad number',
    ['simulate', '--rate', 'fast'],
    /--rate: expected a number ≥ 0.000001, or inf, got "fast"/,
  ],
  [
    'zero rate',
    ['simulate', '--rate', '0'],
    /--rate: expected a number ≥ 0.000001, or inf, got "0"/,
  ],
  [
    'unknown profile',
    ['simulate', '--profile', 'llama-9/tpu'],
    /^goodput: --profile: expected "const:…" or one of .*, got "llama-9\/tpu"$/m,
  ],
  ['unknown policy', ['simulate', '--policy', 'fastest'], /policy: expected a preset/],
  [
    'a policy named as an Object property',
    ['simulate', '--policy', 'constructor'],
    /policy: expected a preset/,
  ],
  [
    'unknown model',
    ['simulate', '--model', 'gpt-9'],
    /^goodput: --model: expected one of .*"gpt-9"$/m,
  ],
  [
    'unknown GPU',
    ['engine', '--gpu', 'b200'],
    /^goodput: --gpu: expected one of a100, h100, got "b200"$/m,
  ],
  // Values each flag takes alone, refused together, by the flag that was typed.
  [
    'a tp without a fitted profile',
    ['serve', '--tp', '3'],
    /^goodput: --model\/--gpu\/--tp: expected a model\/gpu\/tp with a fitted profile .*"llama-3-8b\/h100\/tp3"$/m,
  ],
  [
    'a context past the model',
    ['simulate', '--max-model-len', '200000'],
    /^goodput: --max-model-len: expected an integer in \[2, 8192\] \(llama-3-8b's context\), got 200000$/m,
  ],
  [
    'a TTFT boost without priority scheduling',
    ['simulate', '--ttft-boost-ms', '5'],
    /^goodput: --ttft-boost-ms: expected unset unless the scheduling policy is priority, got 5$/m,
  ],
  [
    'a step budget below the context with chunked prefill off',
    ['engine', '--engine-version', 'vllm-0.6', '--max-num-batched-tokens', '100'],
    /^goodput: --max-num-batched-tokens: expected ≥ the max model length \(8192\) when chunked prefill is off, got 100$/m,
  ],
  ['bad length spec', ['simulate', '--input', 'uniform:9:1'], /--input/],
  [
    // Each run is told by its name: two of one name would be read as one.
    'two policies of one name to compare',
    ['compare', '--policies', 'goodput,least-request,goodput'],
    /^goodput: --policies: expected policies of distinct names \(each run is told by its name; goodput and goodput share one\), got "goodput"$/m,
  ],
  [
    // vLLM will not start one either: requests would be refused by the length they sampled.
    'a KV cache that holds no sequence of the context',
    ['engine', '--gpu-memory-utilization', '0.215'],
    /^goodput: --gpu-memory-utilization: expected a KV cache of at least one sequence of the max model length, 8192 tokens \(this one holds 528: a larger cache, or a max model length ≤ 528\), got 0.215$/m,
  ],
  [
    'a KV cache of too few blocks for the context',
    ['simulate', '--kv-blocks', '10'],
    /^goodput: --kv-blocks: expected .* 8192 tokens \(this one holds 160: .*\), got 10$/m,
  ],
  [
    'a fleet no memory holds',
    ['simulate', '--replicas', '1000000'],
    /--replicas: expected an integer in \[1, 10000\], got "1000000"/,
  ],
];

for (const [name, args, message] of bad) {
  test(`fails clearly on ${name}`, () => {
    const r = goodput(...args);
    assert.notEqual(r.code, 0);
    assert.match(r.err, message);
  });
}

test('a synthetic workload flag beside --trace is refused by name: the rows give arrivals and lengths', () => {
  const trace = 'test/fixtures/traces/azure-conv-200.csv';
  for (const cmd of [['simulate'], ['bench', '--url', 'http://127.0.0.1:9']]) {
    for (const flag of [
      ['--rate', '5'],
      ['--num-requests', '5'],
      ['--input', 'fixed:5'],
      ['--output', 'fixed:5'],
    ]) {
      const r = goodput(...cmd, '--trace', trace, ...flag);
      assert.notEqual(r.code, 0, `${cmd[0]} ${flag.join(' ')}`);
      assert.match(
        r.err,
        new RegExp(`option '${flag[0]} <\\w+>' cannot be used with option '--trace`),
      );
    }
  }
});

test("--max-num-batched-tokens is vLLM's flag; --max-batched-tokens, its first spelling here, still sets it", () => {
  for (const flag of ['--max-num-batched-tokens', '--max-batched-tokens']) {
    const out = join(dir, `budget${flag}.json`);
    const r = goodput('simulate', '--num-requests', '2', flag, '2048', '--out', out);
    assert.equal(r.code, 0, r.err);
    assert.equal(JSON.parse(readFileSync(out, 'utf8')).scenario.maxBatchedTokens, 2048, flag);
  }
  const both = goodput(
    'simulate',
    '--max-batched-tokens',
    '2048',
    '--max-num-batched-tokens',
    '4096',
  );
  assert.notEqual(both.code, 0);
  assert.match(
    both.err,
    /'--max-batched-tokens <n>' cannot be used with option '--max-num-batched-tokens/,
  );
});

test('a malformed trace line names file, line and field', () => {
  const trace = join(dir, 'bad.csv');
  writeFileSync(
    trace,
    'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:47.0000000,abc,10\n',
  );
  const r = goodput('simulate', '--trace', trace);
  assert.equal(r.code, 2);
  assert.match(r.err, /bad\.csv:3: ContextTokens/);
});

test('a policy file is validated, naming file, path and value', () => {
  const file = join(dir, 'policy.yaml');
  writeFileSync(
    file,
    'name: mine\npolicy_revision: r1\nadmission: { type: admit-all }\nrouting: { type: fastest }\n',
  );
  const r = goodput('simulate', '--policy', file, '--num-requests', '10');
  assert.equal(r.code, 2);
  assert.match(
    r.err,
    /policy\.yaml: routing\.type: expected one of round-robin, least-request, least-kv, llm-d-like, sglang-cache-aware, session-hash, expected-completion, got "fastest"/,
  );
  writeFileSync(
    file,
    'name: mine\npolicy_revision: r1\nadmission: { type: admit-all }\nrouting: { type: least-request }\n',
  );
  const ok = goodput('simulate', '--policy', file, '--num-requests', '10');
  assert.equal(ok.code, 0, ok.err);
});

test('the engine version comes from the flag, else the policy file, else vllm-v1; compare needs one', () => {
  const policy = (name: string, version: string) => {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(
      file,
      `name: ${name}\npolicy_revision: r1\nadmission: { type: admit-all }\nrouting: { type: round-robin }\nengine: { version: ${version} }\n`,
    );
    return file;
  };
  const old = policy('old', 'vllm-0.6');
  const recorded = (...args: string[]) => {
    const s = simulated('--num-requests', '20', ...args).scenario;
    return [s.engineVersion, s.chunkedPrefill, s.maxNumSeqs, s.maxBatchedTokens];
  };
  assert.deepEqual(recorded(), ['vllm-v1', true, 1024, 8192]);
  assert.deepEqual(recorded('--policy', old), ['vllm-0.6', false, 256, 8192]);
  assert.deepEqual(recorded('--policy', old, '--engine-version', 'vllm-v1'), [
    'vllm-v1',
    true,
    1024,
    8192,
  ]);
  const bad = goodput('simulate', '--engine-version', 'vllm-0.3', '--num-requests', '5');
  assert.equal(bad.code, 2);
  assert.match(bad.err, /--engine-version.*vllm-v1.*vllm-0\.6.*vllm-0\.4.*"vllm-0\.3"/);
  const both = `${old},${policy('new', 'vllm-v1')}`;
  const clash = goodput('compare', '--policies', both, '--num-requests', '5');
  assert.equal(clash.code, 2);
  assert.match(
    clash.err,
    /engineVersion: expected --engine-version, as the policies name different engines \(vllm-0\.6, vllm-v1\)/,
  );
  const chosen = goodput(
    'compare',
    '--policies',
    both,
    '--num-requests',
    '5',
    '--engine-version',
    'vllm-0.6',
  );
  assert.equal(chosen.code, 0, chosen.err);
});

test('goodput --version prints the package version', () => {
  const r = goodput('--version');
  assert.equal(r.code, 0, r.err);
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
  assert.equal(r.out.trim(), pkg.version);
});

test('an output path that cannot be written fails before the run, or when it fails, naming its flag', () => {
  for (const args of [
    ['simulate', '--num-requests', '5', '--out', '/nonexistent/report.json'],
    ['simulate', '--num-requests', '5', '--html', dir],
    ['simulate', '--num-requests', '5', '--decisions', '/nonexistent/decisions.jsonl'],
    ['compare', '--policies', 'goodput', '--num-requests', '5', '--html', '/nonexistent/a.html'],
    ['capacity', '--out', '/nonexistent/envelope.json'],
    ['bench', '--url', 'http://127.0.0.1:9', '--json', '/nonexistent/result.json'],
    // A file that takes no writes once the run is going (EIO), as a disk that fills midway.
    ['simulate', '--num-requests', '20', '--decisions', '/proc/version'],
  ]) {
    const r = goodput(...args);
    const flag = args.at(-2) as string;
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.err}`);
    assert.match(
      r.err,
      new RegExp(`${flag}: expected a file in a directory this process can write`),
    );
    assert.doesNotMatch(r.err, /\n\s+at /, 'no stack trace');
  }
});

test('simulate --trace says which rows of a decision log it passed over, and why', () => {
  const line = (id: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      request_id: id,
      tenant: 'acme',
      class: 'interactive',
      at_ms: 1,
      asked: { arrival_ms: 0, input_tokens: 100, max_tokens: 10 },
      admission: { result: 'admit' },
      ...extra,
    });
  const done = JSON.stringify({
    request_id: 'a',
    outcome: { state: 'completed', output_tokens: 8 },
  });
  const log = join(dir, 'skipping.jsonl');
  // A retry under an id of its own, then a last line cut as it was written.
  writeFileSync(
    log,
    [line('a'), done, line('b', { attempt: 2 }), line('c').slice(0, 40)].join('\n'),
  );
  const r = goodput('simulate', '--trace', log);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /^trace: 2 rows skipped \(retry: 1, cut_last_line: 1\)$/m);
});
