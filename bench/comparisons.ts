// Regenerates docs/benchmarks.md: the policy comparisons behind the admission, overload,
// fairness, routing and autoscaling work, each run through the real `goodput` CLI with the
// command line shown in the doc, its summary table, and its HTML report (docs/reports/).
// Usage: node bench/comparisons.ts [--data ../shared/data] [--only NAME,NAME]
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join, relative } from 'node:path';
import { DATA_DIR, REPO_ROOT, flag } from './bench-args.ts';

const conv = relative(
  REPO_ROOT,
  join(DATA_DIR, 'traces/azure2023/AzureLLMInferenceTrace_conv.csv'),
);

interface Comparison {
  readonly name: string;
  readonly title: string;
  /** What it shows, and what to look at. */
  readonly about: string;
  readonly args: readonly string[];
}

const COMPARISONS: readonly Comparison[] = [
  {
    name: 'admission',
    title: 'Admission at 4× the trace rate',
    about:
      'The Azure 2023 conversation trace, first 20 minutes at 4× its rate, on 2 × llama-3-8b/H100, every request interactive (TTFT ≤ 2 s, p99 token gap ≤ 80 ms). `baseline-vllm` admits everything and queues in the engines; `goodput` refuses at the door what it cannot serve in time. Look at attainment over offered requests and at the TTFT distribution.',
    args: [
      'compare',
      '--policies',
      'baseline-vllm,goodput',
      '--trace',
      conv,
      '--duration',
      '1200',
      '--rate-scale',
      '4',
      '--replicas',
      '2',
      '--classes',
      'interactive',
      '--seed',
      '3',
    ],
  },
  {
    name: 'overload',
    title: 'Deep overload: 16× the trace rate',
    about:
      'The same fleet and trace at 16×: far past capacity. Goodput must plateau, not collapse, and what it admits must still be served: compare attainment over admitted requests and the door outcomes over time (refusals at the door, not expiries in the queue).',
    args: [
      'compare',
      '--policies',
      'baseline-vllm,goodput',
      '--trace',
      conv,
      '--duration',
      '1200',
      '--rate-scale',
      '16',
      '--replicas',
      '2',
      '--classes',
      'interactive',
      '--seed',
      '3',
    ],
  },
  {
    name: 'fairness',
    title: 'Tenant fairness: 24 Zipf-skewed tenants at 2× capacity',
    about:
      'One llama-3-8b/H100 replica, ShareGPT (vLLM) lengths at about twice its SLO capacity, 24 tenants of equal weight with Zipf-skewed volumes. The goodput preset queues by virtual token counters; look at the service share by tenant over time (light tenants keep their share) and attainment.',
    args: [
      'compare',
      '--policies',
      'baseline-vllm,goodput',
      '--rate',
      '110',
      '--num-requests',
      '6000',
      '--input',
      'sharegpt-vllm',
      '--output',
      'sharegpt-vllm',
      '--tenants',
      'zipf:24:1.2',
      '--seed',
      '1',
    ],
  },
  {
    name: 'routing',
    title: 'Routing on a prefix-heavy mix',
    about:
      'Eight llama-3.1-8b/H100 replicas, the prefix-heavy `mix` (multi-turn chat, hot shared prefixes, long documents, an agent preamble) at 1.5× round-robin’s SLO capacity. `baseline-vllm` routes round-robin, `least-request` by requests in flight, `goodput` by predicted completion time with prefix locality. Look at goodput and the TTFT distribution.',
    args: [
      'compare',
      '--policies',
      'baseline-vllm,least-request,goodput',
      '--prefix',
      'mix',
      '--model',
      'llama-3.1-8b',
      '--replicas',
      '8',
      '--rate',
      '18',
      '--num-requests',
      '3000',
      '--seed',
      '1',
    ],
  },
  {
    name: 'autoscaling-goodput',
    title: 'Autoscaling: the goodput controller through a burst',
    about:
      'The Azure conversation trace re-timed to a diurnal ramp with a 3× burst (`--scenario diurnal-burst`), groups ready 120–240 s after they are requested, 2 to 16 groups, under the goodput policy. Look at the replica groups desired, starting and ready against goodput and offered load.',
    args: [
      'simulate',
      '--policy',
      'goodput',
      '--trace',
      conv,
      '--scenario',
      'diurnal-burst',
      '--autoscaler',
      'goodput',
      '--min-replicas',
      '2',
      '--max-replicas',
      '16',
      '--seed',
      '1',
    ],
  },
  {
    name: 'autoscaling-hpa',
    title: 'Autoscaling: an HPA on GPU utilisation, same burst',
    about:
      'The same run with Kubernetes’ HPA rule on GPU utilisation (70% target, the metric 15 s late): it reacts to busy GPUs, not to the queue or the SLO, and pays for it in GPU-seconds per good request.',
    args: [
      'simulate',
      '--policy',
      'goodput',
      '--trace',
      conv,
      '--scenario',
      'diurnal-burst',
      '--autoscaler',
      'hpa-utilization',
      '--min-replicas',
      '2',
      '--max-replicas',
      '16',
      '--seed',
      '1',
    ],
  },
];

const only = flag('--only')?.split(',');
const reports = join(REPO_ROOT, 'docs', 'reports');
mkdirSync(reports, { recursive: true });
const sections: string[] = [];
for (const c of COMPARISONS) {
  if (only !== undefined && !only.includes(c.name)) continue;
  const html = `docs/reports/${c.name}.html`;
  const args = [...c.args, '--html', html];
  const started = performance.now();
  const r = spawnSync(process.execPath, ['bin/goodput.js', ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  if (r.status !== 0)
    throw new Error(`goodput ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`);
  const table = r.stdout.split('\nHTML report written')[0].trimEnd();
  console.error(`${c.name}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  sections.push(
    [
      `## ${c.title}`,
      '',
      c.about,
      '',
      '```sh',
      `npx goodput ${args.join(' ')}`,
      '```',
      '',
      `Report: [${html.replace('docs/', '')}](${html.replace('docs/', '')})`,
      '',
      '```',
      table,
      '```',
    ].join('\n'),
  );
}
if (only === undefined) {
  const doc = [
    '# Policy comparisons',
    '',
    'Each comparison below is one `goodput` command, run by `npm run docs:benchmarks`',
    '(`node bench/comparisons.ts`), which rewrites this file and the HTML reports beside it',
    '(`docs/reports/`, self-contained: open them from disk). The simulator is deterministic: the',
    'same command gives the same table on any machine, but for the simulator’s own wall time',
    '(`sim wall / speed-up`). Traces are read from `../shared/data`',
    '(`--data` elsewhere). Measured benchmarks of the live system are in `bench/RESULTS.md`.',
    '',
    `Generated on ${cpus()[0]?.model ?? 'unknown CPU'} × ${cpus().length}, Node ${process.version}.`,
    '',
    ...sections.flatMap((s) => [s, '']),
  ].join('\n');
  writeFileSync(join(REPO_ROOT, 'docs', 'benchmarks.md'), doc);
  console.error('docs/benchmarks.md written');
}
