/**
 * What a running gateway may take from its policy file again without a restart: the tenants
 * (API keys, weights, granted classes, quotas, budgets, lanes) under a new `policy_revision`.
 * Every other section shapes state the gateway has built from it — its queues and their
 * controllers, what it learned, its routers, its SLO windows — so a file that changes one is
 * refused, naming it, and the running policy stays. So is a file that changes tenants under the
 * same revision (each decision record names the revision it was made under: two sets of tenants
 * under one name could not be told apart), and one that takes every API key away (the gateway
 * would stop asking clients for one: a restart says that on purpose).
 */
import { isDeepStrictEqual } from 'node:util';
import { resolvePolicy, type ResolvedPolicy } from '../core/config/policy.ts';

/** A policy as read from its file: the document, and what it resolved to. */
export interface PolicyDocument {
  readonly doc: Readonly<Record<string, unknown>>;
  readonly policy: ResolvedPolicy;
}

/** The sections a reload may change; `description` changes nothing served. */
const RELOADABLE = ['tenants', 'policy_revision', 'description'] as const;

/** Why a reload was refused: a restart applies it, or the file needs another revision. */
export type RefusalCode =
  'restart_required' | 'revision_unchanged' | 'revision_reused' | 'keys_removed';

export type ReloadPlan =
  | { readonly kind: 'unchanged' }
  | {
      readonly kind: 'apply';
      /** The tenants differ (a new revision alone changes only what records are stamped with). */
      readonly tenantsChanged: boolean;
    }
  | {
      readonly kind: 'refused';
      readonly code: RefusalCode;
      /** The file's sections at fault, as the file names them. */
      readonly sections: readonly string[];
      readonly message: string;
    };

/** What reloading `next` over `running` would do. */
export function planReload(running: PolicyDocument, next: PolicyDocument): ReloadPlan {
  const restart = sectionsNeedingRestart(running, next);
  if (restart.length > 0) {
    return {
      kind: 'refused',
      code: 'restart_required',
      sections: restart,
      message:
        `${restart.join(', ')} changed: a running gateway reloads only ` +
        `${RELOADABLE.join(', ')}; restart it to apply the rest`,
    };
  }
  const was = running.policy;
  const now = next.policy;
  const tenantsChanged =
    !isDeepStrictEqual(was.tenants.named, now.tenants.named) ||
    !isDeepStrictEqual(was.tenants.fallback, now.tenants.fallback);
  if (was.revision === now.revision) {
    if (!tenantsChanged) return { kind: 'unchanged' };
    return {
      kind: 'refused',
      code: 'revision_unchanged',
      sections: ['policy_revision'],
      message:
        `tenants changed under the same policy_revision ${JSON.stringify(now.revision)}: ` +
        'decision records name the revision they were decided under, so give the change a new one',
    };
  }
  if (keyCount(was) > 0 && keyCount(now) === 0) {
    return {
      kind: 'refused',
      code: 'keys_removed',
      sections: ['tenants'],
      message:
        'every API key is gone from tenants: the gateway would take requests without one; ' +
        'restart it to serve without keys',
    };
  }
  return { kind: 'apply', tenantsChanged };
}

/** API keys the policy's tenants hold. */
export function keyCount(policy: ResolvedPolicy): number {
  let n = 0;
  for (const t of policy.tenants.named.values()) n += t.apiKeySha256.length;
  return n;
}

/**
 * The file's top-level sections whose change a running gateway cannot take: `next` resolved
 * with the running policy's reloadable sections, against the running policy — so a default
 * written out, or a key reordered, is no change. (Resolved, each section keeps its name; the
 * revision, which does not, is one of those carried over.)
 */
function sectionsNeedingRestart(running: PolicyDocument, next: PolicyDocument): string[] {
  const kept: Record<string, unknown> = { ...next.doc };
  for (const key of RELOADABLE) {
    if (key in running.doc) kept[key] = running.doc[key];
    else delete kept[key];
  }
  const asRunning = resolvePolicy(kept);
  const changed: string[] = [];
  for (const key of Object.keys(asRunning) as (keyof ResolvedPolicy)[]) {
    if (key === 'tenants') continue;
    if (!isDeepStrictEqual(asRunning[key], running.policy[key])) changed.push(key);
  }
  return changed;
}
