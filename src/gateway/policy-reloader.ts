/**
 * Reloads a running gateway's policy file, on SIGHUP or `POST /admin/policy/reload`: the file is
 * read and validated again — on a thread of its own, so the streams on the gateway's loop do
 * not wait for a large file's parse — and what `planReload` allows (its tenants, under a new
 * revision) takes effect for the next request: API keys, weights, quotas, granted classes.
 * Requests already admitted keep the terms and the revision they were admitted under. A file
 * that does not validate, or changes what only a restart applies, leaves the running policy in
 * force, and says why: in the answer, the log, and `goodput_policy_last_reload_successful` 0
 * (the file on disk is not what runs), as Prometheus exports its own configuration's reloads. A
 * gateway on a preset has no file: a reload is refused (`no_policy_file`), and what runs is
 * still what it was started with.
 * Reloads run one at a time, in the order asked.
 */
import { isDeepStrictEqual } from 'node:util';
import { Worker } from 'node:worker_threads';
import { TenantDirectory, refuseUnservedModels } from '../core/config/tenant-schema.ts';
import { isConfigError } from '../core/errors.ts';
import type { TenantPolicy } from '../core/request/tenant.ts';
import type { LoadedPolicy } from '../sim/policy-source.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import type { OpsLog } from './ops-log.ts';
import { keyCount, type RefusalCode, type ReloadPlan } from './reload-plan.ts';

export type ReloadTrigger = 'signal' | 'admin';

/**
 * How a reload ended: `applied` and `unchanged` leave the file in force, the others do not;
 * `error`: the file could not be read for a cause of the gateway's (no thread to read it on).
 */
export type ReloadResult = 'applied' | 'unchanged' | 'refused' | 'invalid' | 'error';

export interface ReloadOutcome {
  readonly result: ReloadResult;
  /** Why it was not applied: `planReload`'s code, `invalid_policy`, `no_policy_file`, `read_failed`. */
  readonly code: RefusalCode | 'invalid_policy' | 'no_policy_file' | 'read_failed' | null;
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
  /** The models the backends serve: a tenant may be granted only these. */
  readonly servedModels: readonly string[];
  /**
   * A reload that put a new revision in force, as the decision log records it (the records
   * after it were decided under that revision): its outcome, the file, the tenants it lists.
   */
  readonly onApplied?: (json: string) => void;
}

/** What the reading thread is given (policy-read-worker.ts). */
export interface PolicyRead {
  readonly file: string;
  readonly runningDoc: Readonly<Record<string, unknown>>;
}

/** What it answers: the file's plan with what applying it takes, or why the file is not valid. */
export type PolicyReadReply =
  | {
      readonly ok: true;
      readonly plan: ReloadPlan;
      readonly doc: Readonly<Record<string, unknown>>;
      readonly revision: string;
      readonly named: ReadonlyMap<string, TenantPolicy>;
      readonly fallback: Omit<TenantPolicy, 'name'> | undefined;
    }
  | { readonly ok: false; readonly message: string; readonly path: string };

export class PolicyReloader {
  #running: LoadedPolicy;
  /**
   * The tenants each revision this process has had in force held: a revision put in force
   * again must hold them still (decision records name it; its two meanings could not be told apart).
   */
  readonly #revisions = new Map<string, Tenants>();
  #last: ReloadOutcome | null = null;
  /** The reload running now, if any: the next one starts after it. */
  #turn: Promise<unknown> = Promise.resolve();
  /** The reload asked for that has not started: later asks are answered with its outcome. */
  #waiting: Promise<ReloadOutcome> | null = null;
  readonly #deps: PolicyReloaderDeps;

  constructor(running: LoadedPolicy, deps: PolicyReloaderDeps) {
    this.#running = running;
    this.#revisions.set(running.policy.revision, tenantsOf(running.policy.tenants));
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

  /**
   * Reads the policy file again and applies what a running gateway may take from it. Reloads run
   * one at a time; those asked for while one waits for its turn are that one — it reads the file
   * after all of them were asked — so a burst (a sidecar's retries, a fleet's SIGHUP) reads it
   * once or twice, not once each.
   */
  reload(trigger: ReloadTrigger): Promise<ReloadOutcome> {
    if (this.#waiting !== null) return this.#waiting;
    const outcome = this.#turn
      .then(() => {
        this.#waiting = null;
        return this.#attempt(trigger);
      })
      .then((o) => this.#ended(o));
    this.#waiting = outcome;
    this.#turn = outcome.catch(() => {});
    return outcome;
  }

  #ended(outcome: ReloadOutcome): ReloadOutcome {
    this.#last = outcome;
    const { metrics, log, epochMs } = this.#deps;
    metrics.state.policyReloads.inc({ result: outcome.result });
    const ok = outcome.result === 'applied' || outcome.result === 'unchanged';
    // A preset has no file that could differ from what runs: asking it to reload is refused,
    // but what runs is still its source (else a fleet's blanket SIGHUP would page for ever).
    if (outcome.code !== 'no_policy_file') metrics.state.policyReloadOk.set(ok ? 1 : 0);
    if (ok) metrics.state.policyReloadAt.set(epochMs() / 1000);
    const fields = { ...outcome, file: this.#running.file ?? null };
    if (outcome.result === 'applied') {
      const tenants = this.#running.policy.tenants.named.size;
      this.#deps.onApplied?.(JSON.stringify({ ...fields, tenants }));
    }
    if (ok) log.info(fields, `policy reload: ${outcome.message}`);
    else if (outcome.result === 'error')
      log.error(fields, `policy reload failed: ${outcome.message}`);
    else log.warn(fields, `policy reload ${outcome.result}: ${outcome.message}`);
    return outcome;
  }

  async #attempt(trigger: ReloadTrigger): Promise<ReloadOutcome> {
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
    let read: PolicyReadReply;
    try {
      read = await readOffLoop({ file: running.file, runningDoc: running.doc });
    } catch (e) {
      const why = `the file could not be read: ${(e as Error).message}; ${was} stays in force`;
      return ended('error', why, 'read_failed');
    }
    if (!read.ok) {
      return ended(
        'invalid',
        `${read.message}; ${was} stays in force`,
        'invalid_policy',
        read.path,
      );
    }
    const { plan } = read;
    if (plan.kind === 'unchanged') return ended('unchanged', `${was}: the file is what runs`);
    if (plan.kind === 'refused') {
      const message = `${running.file}: ${plan.message}; ${was} stays in force`;
      return ended('refused', message, plan.code, plan.sections.join(', '));
    }
    // Every other section is the running one's, as planned.
    const tenants = new TenantDirectory(read.named, read.fallback);
    try {
      refuseUnservedModels(tenants, this.#deps.servedModels, running.file);
    } catch (e) {
      if (!isConfigError(e)) throw e;
      return ended('invalid', `${e.message}; ${was} stays in force`, 'invalid_policy', e.path);
    }
    const before = this.#revisions.get(read.revision);
    if (before !== undefined && !isDeepStrictEqual(before, tenantsOf(tenants))) {
      const message =
        `${running.file}: policy_revision ${JSON.stringify(read.revision)} was in force before ` +
        `with other tenants: decision records name the revision they were decided under, so ` +
        `give the change a new one; ${was} stays in force`;
      return ended('refused', message, 'revision_reused', 'policy_revision');
    }
    this.#revisions.set(read.revision, tenantsOf(tenants));
    const policy = { ...running.policy, revision: read.revision, tenants };
    this.#deps.pipeline.retenant(tenants, policy.revision);
    const { metrics } = this.#deps;
    metrics.knowTenants(tenants.named.keys());
    metrics.state.policy.reset();
    metrics.state.policy.set({ policy: policy.name, policy_revision: policy.revision }, 1);
    this.#running = { policy, doc: read.doc, file: running.file };
    const what = plan.tenantsChanged
      ? `${tenants.named.size} tenants, ${keyCount(policy)} API keys`
      : 'the same tenants';
    return ended('applied', `${was} → ${policy.revision} (${what})`);
  }
}

type Tenants = Pick<TenantDirectory, 'named' | 'fallback'>;

/** What a directory holds now (the pipeline's own is replaced in place at each reload). */
function tenantsOf(t: TenantDirectory): Tenants {
  return { named: t.named, fallback: t.fallback };
}

/** The file read and planned on a thread of its own (policy-read-worker.ts). */
function readOffLoop(read: PolicyRead): Promise<PolicyReadReply> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./policy-read-worker.ts', import.meta.url), {
      workerData: read,
    });
    worker.once('message', resolve);
    worker.once('error', reject);
    // After its answer, an exit changes nothing; before it, the thread failed.
    worker.once('exit', (code) => reject(new Error(`the policy reader exited (${code})`)));
  });
}
