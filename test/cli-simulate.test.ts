// The simulator's and the engine's flags for what a fleet runs — scheduling, prefixes and LoRA,
// autoscaling, disaggregation, learned state, several choices — through real processes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dir, exitsNaming, simulated } from './cli-kit.ts';

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
  // What a gateway learned beside the output lengths, which the simulator does not learn, is
  // saved again as it was given.
  const gateway = { ...JSON.parse(readFileSync(state, 'utf8')), url_image_tokens: [1296.5] };
  gateway.prompt_scale = {
    latin: { pairs: 812, weight: 350.1, u: 1.9, r: 271.3, uu: 0.02, ur: 1.6 },
  };
  const given = join(dir, 'gateway-learned.json');
  writeFileSync(given, JSON.stringify(gateway));
  const again = join(dir, 'again.json');
  simulated(
    ...common,
    '--num-requests',
    '20',
    '--learned-state',
    given,
    '--save-learned-state',
    again,
  );
  const kept = JSON.parse(readFileSync(again, 'utf8')) as Record<string, unknown>;
  assert.deepEqual([kept.url_image_tokens, kept.prompt_scale], [[1296.5], gateway.prompt_scale]);
  writeFileSync(join(dir, 'bad-learned.json'), '{"format":"goodput.learned-state","version":1}');
  await exitsNaming(
    ['simulate', ...common, '--num-requests', '10'],
    [
      [['--learned-state', join(dir, 'none.json')], /--learned-state: expected a readable file/],
      [['--learned-state', join(dir, 'bad-learned.json')], /bad-learned\.json: saved_at: expected/],
      // Learned serving llama-3-8b: another model's run does not start from it.
      [
        ['--learned-state', state, '--model', 'llama-3.1-8b'],
        /learned\.json: model: expected llama-3\.1-8b, the model this run serves, got "llama-3-8b"/,
      ],
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

test('simulate: a sparse trace under an autoscaler keeps a bounded timeline; one replayed over more than a year exits 2', async () => {
  const month = join(dir, 'month.jsonl');
  const row = (t: number) => JSON.stringify({ t_ms: t, input_tokens: 100, output_tokens: 10 });
  writeFileSync(month, `${row(0)}\n${row(30 * 86_400_000)}\n`);
  const scaled = ['--autoscaler', 'goodput', '--min-replicas', '1', '--max-replicas', '4'];
  // 30 days of 5 s ticks are 518,400: the timeline keeps at most 100,000.
  const report = simulated('--trace', month, ...scaled);
  assert.equal(report.completed, 2);
  assert.ok(report.autoscale.timeline.length <= 100_000, String(report.autoscale.timeline.length));
  const ages = join(dir, 'ages.jsonl');
  writeFileSync(ages, `${row(0)}\n${row(1e13)}\n`);
  await exitsNaming(
    ['simulate', ...scaled],
    [
      [['--trace', ages], /--trace: expected a window replayed over at most 366 days/],
      [['--trace', month, '--rate-scale', '0.01'], /this one takes 3\.00e\+3 days/],
    ],
  );
});

test("simulate's outputs never overwrite its inputs or each other; a run refused leaves the files there as they were", async () => {
  const trace = join(dir, 'mine.csv');
  writeFileSync(trace, readFileSync('test/fixtures/traces/azure-conv-200.csv'));
  const log = join(dir, 'kept-decisions.jsonl');
  writeFileSync(log, '{"kept":true}\n');
  const same = join(dir, 'same.out');
  await exitsNaming(
    ['simulate'],
    [
      [
        ['--trace', trace, '--decisions', trace],
        /--decisions: expected a file no other flag names \(--trace names it\)/,
      ],
      [
        ['--trace', trace, '--out', trace],
        /--out: expected a file no other flag names \(--trace names it\)/,
      ],
      [
        ['--num-requests', '5', '--out', same, '--html', same],
        /--html: expected a file no other flag names \(--out names it\)/,
      ],
      // The parser's own complaints are usage errors too.
      [['--no-such-flag', '1'], /unknown option '--no-such-flag'/],
      // Refused after its outputs were checked: the decision log already there stays.
      [['--trace', trace, '--prefix', 'mix', '--decisions', log], /--prefix/],
    ],
  );
  assert.deepEqual(readFileSync(trace), readFileSync('test/fixtures/traces/azure-conv-200.csv'));
  assert.equal(readFileSync(log, 'utf8'), '{"kept":true}\n');
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.endsWith('.partial')),
    [],
    'what the refused run began is gone',
  );
  // A run that succeeds replaces it, whole.
  simulated('--num-requests', '5', '--decisions', log);
  assert.ok(readFileSync(log, 'utf8').split('\n').length > 5);
});

test('values that would overflow a run to no end are refused by their flag; --arrival poisson re-times a trace', async () => {
  await exitsNaming(
    ['simulate', '--num-requests', '5'],
    [
      [['--profile', 'const:step_ms=1e400'], /--profile: expected step_ms=<a number ≥ 0>/],
      [['--slowdown', '1e308'], /--slowdown: expected a number > 0 and ≤ 1,000/],
      [['--tool-calls', '64:1e308:0'], /--tool-calls: expected .*WAIT_MS > 0 and ≤ 86,400,000/],
      // So small that the run's clock outgrows its steps: every gap 0, every request good.
      [['--rate', '1e-300'], /--rate: expected a number ≥ 0.000001, or inf, got "1e-300"/],
      [
        ['--prefill-replicas', '1', '--kv-link-gbps', '1e-300'],
        /--kv-link-gbps: expected a number ≥ 0.001, got "1e-300"/,
      ],
    ],
  );
  await exitsNaming(
    ['capacity', '--input', 'fixed:200', '--output', 'fixed:100'],
    [[['--rate', 'inf'], /--rate: expected a number > 0 \(the first probe/]],
  );
  const trace = 'test/fixtures/traces/azure-conv-200.csv';
  const poisson = simulated('--trace', trace, '--arrival', 'poisson');
  assert.deepEqual(poisson.scenario.workload.retimed, { arrival: 'gamma', burstiness: 1 });
  assert.equal(simulated('--trace', trace).scenario.workload.retimed, null);
});
