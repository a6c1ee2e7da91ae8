/**
 * Reloads a running gateway's policy file, on SIGHUP or `POST /admin/policy/reload`: the file is
 * read and validated again, and what `planReload` allows (its tenants, under a new revision)
 * takes effect for the next request — API keys, weights, quotas, granted classes — while
 * requests already admitted keep the terms and the revision they were admitted under. A file
 * that does not validate, or changes what only a restart applies, leaves the running policy in
 * force, and says why: in the answer, the log, and `goodput_policy_last_reload_successful` 0
 * (the file on disk is not what runs), as Prometheus exports its own configuration's reloads.
 */
import { isConfigError } from '../core/errors.ts';
import { keyCount, planReload, type RefusalCode } from './reload-plan.ts';
import type { TenantDirectory } from '../core/config/tenant-schema.ts';
import type { LoadedPolicy } from '../sim/policy-source.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import type { OpsLog } from './ops-log.ts';

export type ReloadTrigger = 'signal' | 'admin';

/** How a reload ended: `applied` and `unchanged` leave the file in force, the others do not. */
export type ReloadResult = 'applied' | 'unchanged' | 'refused' | 'invalid';

export interface ReloadOutcome {
  readonly result: ReloadResult;
  /** Why it was not applied: `planReload`'s code, `invalid_policy`, or `no_policy_file`. */
  readonly code: RefusalCode | 'invalid_policy' | 'no_policy_file' | null;
  /** The config path or section at fault, when one is. */
  readonly param: string | null;
  readonly message: string;
  /** The revision in force after it. */
  readonly policy_revision: string;
  readonly previous_revision: string;
  readonly trigger: ReloadTrigger;
  /** When, as an ISO 8601 instant. */
  readonly at: string;
}

export interface PolicyReloaderDeps {
  /** The running pipeline: takes a reloaded policy's tenants under its revision. */
  readonly pipeline: { retenant(tenants: TenantDirectory, revision: string): void };
  readonly metrics: GatewayMetrics;
  readonly log: OpsLog;
  readonly epochMs: () => number;
  /** Reads the file again (`readPolicyFile`). */
  readonly read: (path: string) => LoadedPolicy;
}

export class PolicyReloader {
  #running: LoadedPolicy;
  #last: ReloadOutcome | null = null;
  readonly #deps: PolicyReloaderDeps;

  constructor(running: LoadedPolicy, deps: PolicyReloaderDeps) {
    this.#running = running;
    this.#deps = deps;
    // As at every reload: the policy in force, and that the file (if any) was taken.
    deps.metrics.state.policyReloadOk.set(1);
    deps.metrics.state.policyReloadAt.set(deps.epochMs() / 1000);
  }

  /** What `GET /admin/policy` answers: the policy in force, where it came from, the last reload. */
  status(): Record<string, unknown> {
    const { policy, file } = this.#running;
    return {
      policy: policy.name,
      policy_revision: policy.revision,
      file: file ?? null,
      tenants: [...policy.tenants.named.keys()],
      unlisted_tenants: policy.tenants.fallback !== undefined,
      api_keys: keyCount(policy),
      last_reload: this.#last,
    };
  }

  /** Reads the policy file again and applies what a running gateway may take from it. */
  reload(trigger: ReloadTrigger): ReloadOutcome {
    const outcome = this.#attempt(trigger);
    this.#last = outcome;
    const { metrics, log, epochMs } = this.#deps;
    metrics.state.policyReloads.inc({ result: outcome.result });
    const ok = outcome.result === 'applied' || outcome.result === 'unchanged';
    metrics.state.policyReloadOk.set(ok ? 1 : 0);
    if (ok) metrics.state.policyReloadAt.set(epochMs() / 1000);
    const fields = { ...outcome, file: this.#running.file ?? null };
    if (ok) log.info(fields, `policy reload: ${outcome.message}`);
    else log.warn(fields, `policy reload ${outcome.result}: ${outcome.message}`);
    return outcome;
  }

  #attempt(trigger: ReloadTrigger): ReloadOutcome {
    const running = this.#running;
    const was = running.policy.revision;
    const ended = (
      result: ReloadResult,
      message: string,
      code: ReloadOutcome['code'] = null,
      param: string | null = null,
    ): ReloadOutcome => ({
      result,
      code,
      param,
      message,
      policy_revision: this.#running.policy.revision,
      previous_revision: was,
      trigger,
      at: new Date(this.#deps.epochMs()).toISOString(),
    });
    if (running.file === undefined) {
      const preset = `the policy is the preset ${JSON.stringify(running.policy.name)}`;
      return ended('refused', `${preset}, not a file: nothing to reload`, 'no_policy_file');
    }
    let next: LoadedPolicy;
    try {
      next = this.#deps.read(running.file);
    } catch (e) {
      if (!isConfigError(e)) throw e;
      return ended('invalid', `${e.message}; ${was} stays in force`, 'invalid_policy', e.path);
    }
    const plan = planReload(running, next);
    if (plan.kind === 'unchanged') return ended('unchanged', `${was}: the file is what runs`);
    if (plan.kind === 'refused') {
      const message = `${running.file}: ${plan.message}; ${was} stays in force`;
      return ended('refused', message, plan.code, plan.sections.join(', '));
    }
    const { policy } = next;
    this.#deps.pipeline.retenant(policy.tenants, policy.revision);
    const { metrics } = this.#deps;
    metrics.knowTenants(policy.tenants.named.keys());
    metrics.state.policy.reset();
    metrics.state.policy.set({ policy: policy.name, policy_revision: policy.revision }, 1);
    this.#running = next;
    const what = plan.tenantsChanged
      ? `${policy.tenants.named.size} tenants, ${keyCount(policy)} API keys`
      : 'the same tenants';
    return ended('applied', `${was} → ${policy.revision} (${what})`);
  }
}
