// Where a V8 CPU profile (node --cpu-prof) spends its time: self time per function and per
// module group, as shares of the busy time (idle excluded). A sample's time is the gap to the
// next sample, as Chrome's DevTools counts it. Groups are the first rule below whose pattern
// matches the function's script (or, for scripts with no URL, its name): the gateway's parts
// by file, libraries by package, Node's internals by subsystem. `(program)` is native code V8
// cannot attribute to a JS function — Node's C++ (llhttp, libuv, socket syscalls) for the most
// part. `--requests N` (the requests the profiled process answered) adds µs per request.
// Usage: node bench/profile-summary.ts FILE.cpuprofile [--top 30] [--requests N]
import { readFileSync } from 'node:fs';
import { flag } from './bench-args.ts';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** [group, pattern over `url` (or `(name)` when the script has no URL)], first match wins. */
const GROUPS: readonly (readonly [string, RegExp])[] = [
  ['idle', /^\(idle\)$/],
  ['GC', /^\(garbage collector\)$/],
  ['native, unattributed (C++: llhttp, libuv, syscalls)', /^\(program\)$/],
  [
    'Node socket writes (native; the write syscall)',
    /^\(write(Utf8String|Latin1String|AsciiString|Ucs2String|Buffer|v)\)$/,
  ],
  ['promise and tick queues', /^\(runMicrotasks\)$|^node:internal\/process\/task_queues/],
  ['V8 builtins without a script (JSON.parse, TextDecoder, …)', /^\(.*\)$/],
  ['Node HTTP server, parser glue and writer', /^node:_http_|^node:internal\/http/],
  [
    'Node net/streams/timers',
    /^node:(net|stream|internal\/streams|timers|internal\/timers|events|internal\/stream_base)/,
  ],
  [
    'Node web streams, fetch Request/Headers (undici)',
    /^node:internal\/(webstreams|deps\/undici)|^node:internal\/web/,
  ],
  ['AbortSignal and EventTarget', /^node:internal\/(event_target|abort_controller)/],
  [
    'startup: module loading, type stripping',
    /^node:internal\/(modules|deps\/amaro|bootstrap)|^wasm:/,
  ],
  ['Node other internals', /^node:/],
  ['@hono/node-server adapter', /node_modules\/@hono\/node-server\//],
  ['Hono routing and context', /node_modules\/hono\//],
  ['zod', /node_modules\/zod\//],
  [
    'prom-client metrics',
    /node_modules\/prom-client\/|src\/gateway\/(gateway-metrics|array-histogram)\.ts/,
  ],
  ['pino logging', /node_modules\/(pino|sonic-boom|thread-stream)/],
  ['other packages', /node_modules\//],
  ['body read', /src\/gateway\/http\/read-body\.ts/],
  ['JSON/zod validation (src/openai)', /src\/openai\/(?!errors|responses|chunks)/],
  [
    'response building (refusals, answers, OpenAI errors)',
    /src\/gateway\/http\/(refusals|answers)\.ts|src\/openai\/(errors|responses|chunks)\.ts/,
  ],
  [
    'decision record (built, and kept for lookup)',
    /src\/core\/observe\/decision-record\.ts|src\/gateway\/(decision-log|bounded-map)\.ts/,
  ],
  ['pipeline and admission (src/core)', /src\/core\//],
  ['request steps (completions, client headers, door, in-flight)', /src\/gateway\/(http|shared)\//],
  ['gateway, other', /src\/gateway\//],
  [
    'embedded fleet and runtime (src/engine*, src/runtime)',
    /src\/(engine|engine-server|runtime)\//,
  ],
  ['other', /./],
];

const file = process.argv[2];
if (file === undefined || file.startsWith('--')) {
  throw new Error('usage: node bench/profile-summary.ts FILE.cpuprofile [--top 30]');
}
const top = Number(flag('--top') ?? '30');
const requests = Number(flag('--requests') ?? 'NaN');
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>(); // node id → µs
for (let i = 0; i < profile.samples.length; i++) {
  const us = profile.timeDeltas[i + 1] ?? 0;
  self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + us);
}

const where = (f: CallFrame) => (f.url === '' ? `(${f.functionName})` : f.url);
const groupOf = (f: CallFrame) => {
  const key = f.url === '' ? `(${f.functionName.replace(/^\((.*)\)$/, '$1')})` : f.url;
  return (GROUPS.find(([, re]) => re.test(key)) ?? GROUPS[GROUPS.length - 1])[0];
};
const short = (url: string) => url.replace(/^file:\/\/.*?\/(node_modules|src|bench)\//, '$1/');

const functions = new Map<string, { us: number; group: string }>();
const groups = new Map<string, number>();
let total = 0;
let idle = 0;
for (const [id, us] of self) {
  const f = (byId.get(id) as ProfileNode).callFrame;
  const group = groupOf(f);
  total += us;
  if (group === 'idle') {
    idle += us;
    continue;
  }
  const key = `${f.functionName || '(anonymous)'}  ${short(where(f))}${f.url === '' ? '' : `:${f.lineNumber + 1}`}`;
  const e = functions.get(key) ?? { us: 0, group };
  e.us += us;
  functions.set(key, e);
  groups.set(group, (groups.get(group) ?? 0) + us);
}
const busy = total - idle;
const pct = (us: number) =>
  `${((100 * us) / busy).toFixed(1)}%` +
  (Number.isNaN(requests) ? '' : ` (${(us / requests).toFixed(1)} µs/request)`);
const ms = (us: number) => (us / 1000).toFixed(0);

console.log(
  `${file}: ${ms(total)} ms sampled, ${ms(busy)} ms busy (${((100 * busy) / total).toFixed(0)}%), ` +
    `${profile.samples.length} samples` +
    (Number.isNaN(requests) ? '' : `, ${(busy / requests).toFixed(0)} µs busy per request`),
);
console.log('\n| group | self ms | share of busy |\n|---|---:|---:|');
for (const [g, us] of [...groups].sort((a, b) => b[1] - a[1])) {
  console.log(`| ${g} | ${ms(us)} | ${pct(us)} |`);
}
console.log(`\n| top self-time functions | group | self ms | share |\n|---|---|---:|---:|`);
for (const [k, e] of [...functions].sort((a, b) => b[1].us - a[1].us).slice(0, top)) {
  console.log(`| ${k} | ${e.group} | ${ms(e.us)} | ${pct(e.us)} |`);
}
