// The files in deploy/ speak the gateway's language: every metric an alert rule or a dashboard
// panel reads is one a real gateway exports — read from its /metrics, never from a list kept by
// hand — or one the rules record themselves; promtool accepts the rules, and their unit tests
// (synthetic series, which alerts fire) pass.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { parse, parseAllDocuments } from 'yaml';
import { engines, gateway } from './gateway/gateway-kit.ts';

const RULES = 'deploy/prometheus/goodput-rules.yaml';
const RULES_TESTS = 'deploy/prometheus/goodput-rules.test.yaml';
const DASHBOARD = 'deploy/grafana/goodput.json';

/** Words in PromQL that are neither metrics nor followed by a parenthesis. */
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/** The metric names a PromQL expression reads (functions, labels, ranges and strings aside). */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/\$\w+/g, '');
  const names = [];
  for (const m of bare.matchAll(/(?<![\w.])[A-Za-z_:][\w:]*(?!\w*\s*\()/g)) {
    if (!KEYWORDS.has(m[0])) names.push(m[0]);
  }
  return names;
}

interface RuleFile {
  groups: { rules: { record?: string; alert?: string; expr: string }[] }[];
}

/** Every name a real gateway's /metrics declares (a histogram as its three series). */
async function exportedNames(): Promise<Set<string>> {
  const gw = await gateway(await engines(1));
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (type !== 'histogram') names.add(name);
    else for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
  }
  return names;
}

test('the name reader finds metrics, not functions, labels, keywords or variables', () => {
  assert.deepEqual(
    metricNames(
      'histogram_quantile(0.9, sum by (le) (rate(a_bucket{x=~"$v",y="b c"}[$__rate_interval]))) > on () max(b) and c offset 15m or max by (slo) (1 - d:e:f)',
    ),
    ['a_bucket', 'b', 'c', 'd:e:f'],
  );
});

test('every metric the alert rules and the dashboard read is one the gateway exports', async () => {
  const exported = await exportedNames();
  assert.ok(
    exported.has('goodput_slo_events_total') && exported.has('goodput_ttft_seconds_bucket'),
  );

  const rules = parse(readFileSync(RULES, 'utf8')) as RuleFile;
  const all = rules.groups.flatMap((g) => g.rules);
  const recorded = new Set(all.flatMap((r) => (r.record === undefined ? [] : [r.record])));
  const known = (name: string) => exported.has(name) || recorded.has(name);
  const unknown: string[] = [];
  for (const r of all) {
    for (const name of metricNames(r.expr)) {
      if (!known(name)) unknown.push(`${RULES}: ${r.record ?? r.alert}: ${name}`);
    }
  }
  assert.ok(all.some((r) => r.alert !== undefined));

  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    panels: { id: number; title: string; targets?: { expr: string }[] }[];
    templating: { list: { name: string; query?: unknown }[] };
  };
  const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => [p.title, t.expr]));
  assert.ok(exprs.length > 20, `${exprs.length} panel queries`);
  for (const [title, expr] of exprs) {
    // The dashboard reads only what the gateway exports: it must work without the rules loaded.
    for (const name of metricNames(expr)) {
      if (!exported.has(name)) unknown.push(`${DASHBOARD}: ${title}: ${name}`);
    }
  }
  for (const v of dashboard.templating.list) {
    const q = typeof v.query === 'object' ? (v.query as { query: string }).query : v.query;
    const m = typeof q === 'string' ? /^label_values\((\w+),/.exec(q) : null;
    if (m !== null && !exported.has(m[1])) unknown.push(`${DASHBOARD}: $${v.name}: ${m[1]}`);
  }
  assert.deepEqual(unknown, []);
  const ids = dashboard.panels.map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
});

test('promtool accepts the rules, and their unit tests pass', async () => {
  const run = promisify(execFile);
  try {
    await run('promtool', ['--version']);
  } catch {
    assert.fail('promtool is missing: scripts/provision-tests.sh installs it (Debian: prometheus)');
  }
  await run('promtool', ['check', 'rules', RULES]);
  const { stdout } = await run('promtool', ['test', 'rules', RULES_TESTS]);
  assert.match(stdout, /SUCCESS/);
});

test("the Kubernetes actuator's Role grants what it calls: the scale subresource, the Lease", () => {
  type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
  const docs = parseAllDocuments(readFileSync('deploy/kubernetes/rbac.yaml', 'utf8')).map(
    (d) => d.toJS() as { kind: string; rules?: Rule[] },
  );
  const role = docs.find((d) => d.kind === 'Role');
  const granted = (role?.rules ?? []).flatMap((r) =>
    r.resources.flatMap((res) => r.verbs.map((v) => `${r.apiGroups[0]}/${res}:${v}`)),
  );
  // KubeScale's GET and PATCH; KubeLease's GET, POST (create) and PUT (update).
  assert.deepEqual(granted.sort(), [
    'apps/statefulsets/scale:get',
    'apps/statefulsets/scale:patch',
    'coordination.k8s.io/leases:create',
    'coordination.k8s.io/leases:get',
    'coordination.k8s.io/leases:update',
  ]);
  assert.ok(['ServiceAccount', 'RoleBinding'].every((k) => docs.some((d) => d.kind === k)));
});
