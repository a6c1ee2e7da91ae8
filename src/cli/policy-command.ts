/**
 * `goodput policy check FILE`: validates a policy file as `goodput serve` and `goodput simulate`
 * would load it, and says what it runs — before a deployment or a reload, as `promtool check
 * config` does for Prometheus (a preset's name says what the preset runs). A bad file is one line naming the file, the dotted path and the
 * value (exit 2). With `--running FILE`, the file a gateway now runs, it also says what a reload
 * would do (SIGHUP, `POST /admin/policy/reload`): apply the new tenants, change nothing, or be
 * refused — naming the sections only a restart applies (exit 1). With `--served-models`, the
 * names the gateway serves (its --served-model-name and --lora-modules), a tenant's `models`
 * naming another is refused as the gateway would refuse it at start (exit 2).
 */
import { Command } from 'commander';
import type { ResolvedPolicy } from '../core/config/policy.ts';
import { ConfigError } from '../core/errors.ts';
import { keyCount, planReload } from '../gateway/reload-plan.ts';
import { readPolicy } from '../sim/policy-source.ts';
import { refuseUnservedModels } from '../core/config/tenant-schema.ts';

export function policyCommand(): Command {
  return new Command('policy').description('work with policy files').addCommand(
    new Command('check')
      .description(
        'validate a policy file and say what it runs; with --running, what a reload of a gateway running that file would do',
      )
      .argument('<file>', 'a YAML or JSON policy file, or a preset name')
      .option('--running <file>', 'the policy file a running gateway was started with')
      .option(
        '--served-models <names>',
        "the model names the gateway serves, comma-separated (its --served-model-name, then its --lora-modules): each tenant's models must be among them",
      )
      .action((file: string, o: { running?: string; servedModels?: string }) => {
        // Every input is judged before a line is printed: a bad one is the only line.
        const served = o.servedModels === undefined ? undefined : servedModels(o.servedModels);
        const next = readPolicy(file, '<file>');
        if (served !== undefined) refuseUnservedModels(next.policy.tenants, served, next.file);
        const running = o.running === undefined ? undefined : readPolicy(o.running, '--running');
        console.log(`${next.file === undefined ? `${file} (a preset)` : file}: valid`);
        console.log(describePolicy(next.policy));
        if (o.running === undefined || running === undefined) return;
        if (running.file === undefined) {
          console.log(
            `reload: a gateway running the preset ${o.running} has no file to reload: restart it with --policy ${file}`,
          );
          process.exitCode = 1;
          return;
        }
        const plan = planReload(running, next);
        const from = `a gateway running ${o.running} (${running.policy.revision})`;
        if (plan.kind === 'unchanged') {
          console.log(`reload: ${from} would change nothing`);
        } else if (plan.kind === 'apply') {
          const what = plan.tenantsChanged ? 'its tenants' : 'its revision alone';
          console.log(`reload: ${from} would take ${what} under ${next.policy.revision}`);
        } else {
          console.log(`reload: ${from} would refuse it: ${plan.message}`);
          process.exitCode = 1;
        }
      }),
  );
}

/** `--served-models`' names: at least one, none empty (an empty list would check nothing). */
function servedModels(list: string): string[] {
  const names = list.split(',').map((m) => m.trim());
  if (names.some((m) => m === '')) {
    throw new ConfigError('--served-models', 'model names, comma-separated, none empty', list);
  }
  return names;
}

/** What a policy runs, in a few lines: its stages, classes and tenants. */
function describePolicy(p: ResolvedPolicy): string {
  const admission =
    p.admission.type === 'goodput'
      ? `goodput (gates: ${p.admission.gates.join(', ')})`
      : p.admission.type;
  const classes = Object.values(p.classes).map((c) => {
    const o = c.objectives;
    const objectives = [
      o.ttftMs === undefined ? [] : `TTFT ${o.ttftMs} ms`,
      o.itlP99Ms === undefined ? [] : `gap p99 ${o.itlP99Ms} ms`,
      o.tpotMs === undefined ? [] : `TPOT ${o.tpotMs} ms`,
      o.e2eMs === undefined ? [] : `E2E ${o.e2eMs} ms`,
    ].flat();
    return `${c.name} (${objectives.join(', ') || 'no objective'}; ${c.overload})`;
  });
  const named = p.tenants.named;
  const keyed = [...named.values()].filter((t) => t.apiKeySha256.length > 0).length;
  const unlisted = p.tenants.fallback === undefined ? 'refused' : 'served with the defaults';
  return [
    `  policy ${p.name}, revision ${p.revision}`,
    `  admission ${admission}; dispatch ${p.dispatch.type}; queueing ${p.queueing.order}; routing ${p.routing.type}`,
    `  classes: ${classes.join('; ')}`,
    `  tenants: ${named.size} listed, ${keyed} with API keys (${keyCount(p)} keys); unlisted tenants ${unlisted}`,
    `  SLOs: ${p.slos.map((s) => s.name).join(', ') || 'none'}`,
  ].join('\n');
}
