// The command line as a user meets it: real processes, real files, real exit codes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { tempDir } from './temp-dir.ts';

const dir = tempDir('cli');

function goodput(...args: string[]) {
  const r = spawnSync(process.execPath, ['bin/goodput.js', ...args], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

let reports = 0;
/** `goodput simulate ARGS --out FILE` through a real process, which must succeed: its report. */
function simulated(...args: string[]) {
  const out = join(dir, `report-${++reports}.json`);
  const r = goodput('simulate', ...args, '--out', out);
  assert.equal(r.code, 0, r.err);
  return JSON.parse(readFileSync(out, 'utf8'));
}

/** `goodput ARGS` in a process of its own, run to its end beside others. */
function goodputAside(...args: string[]): Promise<ReturnType<typeof goodput>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/goodput.js', ...args]);
    let [out, err] = ['', ''];
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, out, err }));
  });
}

/**
 * Each case — extra arguments, and the flag its error must name — exits 2 naming that flag, with
 * no stack trace. The cases run at once, each a process of its own.
 */
async function exitsNaming(
  base: readonly string[],
  cases: readonly (readonly [readonly string[], RegExp])[],
): Promise<void> {
  const runs = await Promise.all(cases.map(([args]) => goodputAside(...base, ...args)));
  for (const [i, [args, named]] of cases.entries()) {
    const r = runs[i];
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.err}`);
    assert.match(r.err, named);
    assert.doesNotMatch(r.err, /\n\s+at /, 'no stack trace');
  }
}

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
    /--rate: expected a number > 0, or inf, got "fast"/,
  ],
  ['zero rate', ['simulate', '--rate', '0'], /--rate: expected a number > 0, or inf, got "0"/],
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

test('serve: a decision log it cannot append to fails at start, naming the flag and the path', () => {
  // A directory where the file should be: no server starts, nothing listens.
  const r = goodput('serve', '--port', '0', '--decisions', dir);
  assert.equal(r.code, 2);
  assert.match(r.err, /--decisions: expected a file it can append to \(EISDIR/);
  assert.ok(r.err.includes(JSON.stringify(dir)), r.err);
  assert.doesNotMatch(r.out, /OpenAI API at/);
});

test('goodput --version prints the package version', () => {
  const r = goodput('--version');
  assert.equal(r.code, 0, r.err);
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
  assert.equal(r.out.trim(), pkg.version);
});

test('serve --help says how API keys are given and how it drains', () => {
  const r = goodput('serve', '--help');
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /Authorization: Bearer <key>/);
  assert.match(r.out, /api_keys_sha256/);
  assert.match(r.out, /--drain-timeout <seconds>/);
});

test('serve: a bad --backend is a clear error at start, naming the flag and the value', () => {
  for (const url of ['notaurl', 'ftp://10.0.0.5:21']) {
    const r = goodput('serve', '--port', '0', '--backend', url);
    assert.equal(r.code, 2, r.err);
    assert.match(
      r.err,
      /^goodput: --backend: expected an http\(s\) URL such as http:\/\/10\.0\.0\.5:8000, got "/,
    );
    assert.doesNotMatch(r.err, /at .*\.ts:\d+/, 'no stack trace');
  }
});

test('serve says at start when the open-file limit would drop a flood of connections', async (t) => {
  if (!existsSync('/proc/self/limits')) return t.skip('no /proc here');
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  const { port } = busy.address() as AddressInfo;
  try {
    // Node lifts its soft limit to the hard one at start, so the hard limit is what counts. A
    // busy port ends the run right after the start-up lines.
    const run = (limit: number) =>
      spawnSync(
        'bash',
        [
          '-c',
          `ulimit -n ${limit} && exec "${process.execPath}" bin/goodput.js serve --port ${port} --profile const:step_ms=2`,
        ],
        { encoding: 'utf8' },
      ).stdout;
    const warned = (out: string) =>
      out
        .split('\n')
        .filter((l) => l.includes('open_files_limit'))
        .map((l) => JSON.parse(l) as { level: number; open_files_limit: number; msg: string });
    const [low] = warned(run(1024));
    assert.equal(low?.open_files_limit, 1024);
    assert.equal(low.level, 40);
    assert.match(low.msg, /ulimit -n/);
    assert.deepEqual(warned(run(8192)), []);
  } finally {
    busy.close();
  }
});

test('serve: a port in use is a clear error (exit 2), not an unhandled EADDRINUSE', async () => {
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  const { port } = busy.address() as AddressInfo;
  try {
    const r = goodput('serve', '--port', String(port), '--profile', 'const:step_ms=2');
    assert.equal(r.code, 2, r.err);
    assert.equal(r.err.trim(), `goodput: --port: expected a free port, got ${port}`);
    // What it said before giving up is operational JSON, one line each.
    for (const line of r.out
      .trim()
      .split('\n')
      .filter((l) => l !== '')) {
      assert.doesNotThrow(() => JSON.parse(line), line);
    }
  } finally {
    busy.close();
  }
});

test('the scheduling, preemption and tool-call flags reach the engine from the command line; bad ones are refused by name', async () => {
  const policy = join(dir, 'scored.yaml');
  writeFileSync(
    policy,
    'name: scored\npolicy_revision: r1\nadmission: { type: goodput }\ndispatch: { type: flow-control }\n' +
      'routing: { type: least-request }\n' +
      'queueing: { order: scored, cost: { kv_gib_second_weight: 10 } }\n' +
      'tenants: { ops: { lane: admin }, "*": {} }\n',
  );
  const report = simulated(
    '--policy',
    policy,
    '--num-requests',
    '200',
    '--rate',
    '20',
    '--classes',
    'interactive:0.5,batch:0.5',
    '--tenants',
    'zipf:3:1',
    '--scheduling-policy',
    'priority',
    '--ttft-boost-ms',
    '1000',
    '--preemption',
    'auto',
    '--max-iteration-ms',
    '60',
    '--long-prefill-token-threshold',
    '512',
    '--tool-calls',
    '1:200:50',
    '--tool-kv',
    'keep',
    '--preemption-victims',
    'slack',
    '--decode-token-budget',
    '64',
  );
  const s = report.scenario;
  assert.deepEqual(
    [s.schedulingPolicy, s.ttftBoostMs, s.preemption, s.maxIterationMs, s.toolKv, s.toolCalls],
    ['priority', 1000, 'auto', 60, 'keep', '1:200:50'],
  );
  assert.deepEqual([s.preemptionVictims, s.decodeTokenBudget], ['slack', 64]);
  assert.equal(typeof report.engine.decodes_deferred, 'number');
  assert.equal(report.fairness.order, 'scored');
  assert.equal(report.fairness.cost.kv_gib_second_weight, 10);
  assert.ok(report.preemption.tool_pauses.keep > 0);
  await exitsNaming(
    ['simulate', '--num-requests', '5'],
    [
      [['--tool-calls', '2:soon:10'], /--tool-calls/],
      [['--tool-kv', 'hold'], /--tool-kv/],
      [['--scheduling-policy', 'lifo'], /--scheduling-policy/],
      [
        ['--ttft-boost-ms', '100'],
        /--ttft-boost-ms: expected unset unless the scheduling policy is priority/,
      ],
      [['--max-iteration-ms', '-5'], /--max-iteration-ms/],
      [['--preemption-victims', 'oldest'], /--preemption-victims/],
      [['--decode-token-budget', '0'], /--decode-token-budget/],
    ],
  );
});

test('simulate: a prefix-heavy workload with LoRA adapters routed by expected completion; bad values exit 2 naming the flag', async () => {
  const policy = join(dir, 'routing.yaml');
  writeFileSync(
    policy,
    'name: routing\npolicy_revision: r1\nadmission: { type: admit-all }\nrouting: { type: expected-completion, prefix: { mode: precise }, session: { mode: soft } }\n',
  );
  const report = simulated(
    '--policy',
    policy,
    '--replicas',
    '2',
    '--num-requests',
    '200',
    '--rate',
    '10',
    '--model',
    'llama-3.1-8b',
    '--prefix',
    'mix',
    '--adapters',
    'zipf:4:1',
    '--max-loras',
    '2',
  );
  assert.equal(report.routing.type, 'expected-completion');
  assert.ok(report.routing.prefix_hit_rate > 0.3, String(report.routing.prefix_hit_rate));
  assert.equal(report.scenario.adapters, 'zipf:4:1');
  assert.equal(report.completed, 200);
  await exitsNaming(
    ['simulate', '--num-requests', '5'],
    [
      [['--prefix', 'lunch:1'], /--prefix/],
      [['--adapters', 'zipf:0:1'], /--adapters/],
      [['--lora-modules', 'bad name!'], /--lora-modules/],
      [['--lora-modules', 'sql', 'sql=/loras/sql'], /--lora-modules: expected each name once/],
      [['--lora-modules', 'llama-3-8b'], /--lora-modules: expected names other than/],
      [['--max-loras', '0'], /--max-loras/],
    ],
  );
});

test('serve: a bad autoscaling flag exits 2 naming it, before anything listens', async () => {
  await exitsNaming(
    ['serve', '--port', '0'],
    [
      [['--autoscaler', 'nope'], /--autoscaler/],
      [['--ready-time', 'soon'], /--ready-time/],
      [['--ready-time', '200-100', '--autoscaler', 'none'], /--ready-time/],
      [['--min-replicas', '4', '--max-replicas', '2'], /--max-replicas/],
      [['--burst-headroom', '0.5'], /--burst-headroom/],
      [['--scale-in-window', '-1'], /--scale-in-window/],
      [['--engine-pool', 'cloud'], /--engine-pool/],
      [['--engine-pool', 'local', '--autoscaler', 'none'], /--engine-pool/],
      [['--engine-pool', 'local', '--backend', 'http://127.0.0.1:9'], /--engine-pool/],
      [['--autoscaler', 'none', '--min-replicas', '2'], /--min-replicas: expected unset with/],
      [['--autoscaler', 'none', '--capacity-envelope', 'e.json'], /--capacity-envelope/],
      // Read only by an autoscaler that plans with a group's capacity.
      [
        ['--autoscaler', 'hpa-utilization', '--burst-headroom', '3'],
        /--burst-headroom: expected unset with --autoscaler hpa-utilization \(only an autoscaler that plans with a group's capacity reads it: goodput\), got 3/,
      ],
      [
        ['--autoscaler', 'keda-queue', '--capacity-envelope', 'e.json'],
        /--capacity-envelope: expected unset with --autoscaler keda-queue/,
      ],
    ],
  );
});

test('serve and engine: a bad port, address, Redis URL or model name exits 2 naming its flag, no stack trace', async () => {
  const cases: [args: string[], named: RegExp][] = [
    [['engine', '--port', '99999'], /--port/],
    [['engine', '--served-model-name', ''], /--served-model-name/],
    [
      ['engine', '--num-scheduler-steps', '4'],
      /--num-scheduler-steps: expected 1 under vllm-v1 \(multi-step scheduling is vLLM 0\.6's/,
    ],
    [['engine', '--served-model-name', 'm', '--lora-modules', 'm'], /--lora-modules/],
    [['serve', '--port', '0', '--redis', 'notaurl'], /--redis: expected a Redis URL/],
    [['serve', '--port', '0', '--redis', 'redis://:x@'], /--redis/],
    [['serve', '--port', '0', '--served-model-name', ''], /--served-model-name/],
    [['serve', '--port', '0', '--host', 'nosuchhost.invalid'], /--host: expected an address/],
    // Flags that mean nothing with the others given: refused, not dropped in silence.
    [
      ['serve', '--port', '0', '--gateway-replicas', '5'],
      /--gateway-replicas: expected unset without --redis .*, got 5/,
    ],
    [['serve', '--port', '0', '--redis-failure', 'closed'], /--redis-failure: expected unset/],
    [
      ['serve', '--port', '0', '--backend', 'http://127.0.0.1:9', '--replicas', '3'],
      /--replicas: expected unset with --backend \(it sizes the embedded fleet\), got 3/,
    ],
  ];
  await exitsNaming([], cases);
});

test('simulate: autoscaling under a load shape with a group failure, through a real process; bad values exit 2 naming the flag', async () => {
  const report = simulated(
    '--policy',
    'goodput',
    '--autoscaler',
    'goodput',
    '--min-replicas',
    '2',
    '--max-replicas',
    '6',
    '--ready-time',
    '30-60',
    '--scenario',
    'diurnal-burst',
    '--fail-group',
    '40',
    '--rate',
    '20',
    '--num-requests',
    '3000',
    '--input',
    'sharegpt-vllm',
    '--output',
    'sharegpt-vllm',
  );
  assert.equal(report.scenario.workload.scenario.name, 'diurnal-burst');
  assert.equal(report.fleet.failures.groups, 1);
  assert.ok(report.autoscale.timeline.length > 0);
  await exitsNaming(
    ['simulate', '--num-requests', '5'],
    [
      [['--scenario', 'lunch-rush'], /--scenario/],
      [['--autoscaler', 'magic'], /--autoscaler/],
      [['--autoscaler', 'goodput', '--ready-time', '2-1'], /--ready-time/],
      [['--fail-group', '-3'], /--fail-group/],
      [
        ['--autoscaler', 'goodput', '--scale-freeze', '90-30'],
        /--scale-freeze: expected seconds FROM-TO/,
      ],
      // An autoscaler's limits without one: refused, not dropped in silence.
      [['--min-replicas', '3'], /--min-replicas: expected unset without --autoscaler/],
      [['--max-replicas', '8'], /--max-replicas: expected unset without --autoscaler/],
      [['--burst-headroom', '2'], /--burst-headroom: expected unset without --autoscaler/],
      [['--capacity-envelope', 'e.json'], /--capacity-envelope: expected unset/],
      [['--scale-freeze', '10-20'], /--scale-freeze: expected unset without --autoscaler/],
      [
        ['--autoscaler', 'kpa-like', '--burst-headroom', '2'],
        /--burst-headroom: expected unset with --autoscaler kpa-like/,
      ],
    ],
  );
});

test('an output path that cannot be written fails before the run, naming its flag', () => {
  for (const args of [
    ['simulate', '--num-requests', '5', '--out', '/nonexistent/report.json'],
    ['simulate', '--num-requests', '5', '--html', dir],
    ['simulate', '--num-requests', '5', '--decisions', '/nonexistent/decisions.jsonl'],
    ['compare', '--policies', 'goodput', '--num-requests', '5', '--html', '/nonexistent/a.html'],
    ['capacity', '--out', '/nonexistent/envelope.json'],
    ['bench', '--url', 'http://127.0.0.1:9', '--json', '/nonexistent/result.json'],
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

test('simulate --prefill-replicas: a disaggregated fleet in the report; a link without a pool, or a bad size, exits 2 naming the flag', async () => {
  const report = simulated(
    '--num-requests',
    '200',
    '--rate',
    '10',
    '--replicas',
    '2',
    '--prefill-replicas',
    '1',
    '--kv-link-gbps',
    '100',
  );
  assert.equal(report.scenario.prefillReplicas, 1);
  assert.equal(report.fleet.prefill.replicas, 1);
  assert.equal(report.fleet.prefill.kv_transfers, report.completed);
  // A range under an autoscaler: the prefill pool has a loop of its own.
  const auto = simulated(
    '--num-requests',
    '400',
    '--rate',
    '20',
    '--input',
    'uniform:1500:3000',
    '--autoscaler',
    'goodput',
    '--min-replicas',
    '1',
    '--max-replicas',
    '3',
    '--ready-time',
    '5-10',
    '--prefill-replicas',
    '1-3',
  ).autoscale;
  assert.equal(auto.prefill.max_replicas, 3);
  assert.ok(auto.prefill.timeline.length > 0);
  await exitsNaming(
    ['simulate', '--num-requests', '5'],
    [
      [['--kv-link-gbps', '100'], /--kv-link-gbps/],
      [['--prefill-replicas', '0'], /--prefill-replicas/],
      [['--prefill-replicas', '1', '--kv-link-gbps', 'fast'], /--kv-link-gbps/],
      [['--prefill-replicas', '1-4'], /--prefill-replicas.*--autoscaler/],
      [['--prefill-replicas', '4-1'], /--prefill-replicas/],
    ],
  );
});

test('simulate --learned-state starts from what an earlier run learned: a burst after it is not cold', async () => {
  const state = join(dir, 'learned.json');
  const shape = ['--input', 'fixed:40', '--output', 'sharegpt-sarathi', '--replicas', '2'];
  const common = [...shape, '--classes', 'interactive', '--policy', 'goodput'];
  const teach = ['--rate', '20', '--num-requests', '300', '--seed', '7'];
  simulated(...common, ...teach, '--save-learned-state', state);
  assert.match(readFileSync(state, 'utf8'), /^\{"format":"goodput.learned-state"/);
  const burst = ['--arrival', 'gamma', '--burstiness', '0.2', '--rate', '1130'];
  const flood = [...common, ...burst, '--num-requests', '1500', '--seed', '1'];
  const cold = simulated(...flood);
  const warm = simulated(...flood, '--learned-state', state);
  // Cold, each request reserves KV for 4,096 tokens of output; warm, for the learned p90.
  assert.ok(
    warm.admission.admitted > 1.5 * cold.admission.admitted,
    `${warm.admission.admitted} vs ${cold.admission.admitted}`,
  );
  assert.equal(warm.slo.attainment_admitted, 1);
  assert.deepEqual(warm.estimate.restored.classes, { interactive: 256 });
  assert.equal(cold.estimate.restored, undefined);
  assert.equal(cold.slo.attainment_admitted, 1);
  writeFileSync(join(dir, 'bad-learned.json'), '{"format":"goodput.learned-state","version":1}');
  await exitsNaming(
    ['simulate', ...common, '--num-requests', '10'],
    [
      [['--learned-state', join(dir, 'none.json')], /--learned-state: expected a readable file/],
      [['--learned-state', join(dir, 'bad-learned.json')], /bad-learned\.json: saved_at: expected/],
    ],
  );
});

test('simulate --n: each request asks for several choices of its prompt; a bad count, or a V0 engine, exits 2 naming it', async () => {
  const shape = [
    '--num-requests',
    '60',
    '--rate',
    '2',
    '--input',
    'fixed:800',
    '--output',
    'fixed:40',
  ];
  const report = simulated(...shape, '--n', '3');
  assert.equal(report.scenario.workload.choices, 3);
  assert.equal(report.completed, 60);
  // The others find the first's 50 whole blocks of 16 tokens but the last, whose final token
  // each computes again to sample from, as vLLM does.
  assert.equal(report.engine.prefix_hit_tokens, 60 * 2 * 784);
  await exitsNaming(
    ['simulate', ...shape],
    [
      [['--n', '0'], /--n: expected an integer/],
      [['--n', '129'], /--n: expected an integer from 1 to 128/],
      [
        ['--n', '2', '--engine-version', 'vllm-0.6'],
        /--n: expected 1 under --engine-version vllm-0.6/,
      ],
    ],
  );
});
