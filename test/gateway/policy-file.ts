// A policy file as the reload tests write one: in a directory of its own, rewritten between
// reloads, with the stages of the goodput preset and the tenants a test gives.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';

/** A policy file in a directory of its own; `write` replaces what it holds. */
export function policyFile(): { path: string; write(doc: Record<string, unknown>): void } {
  const path = join(mkdtempSync(join(tmpdir(), 'goodput-policy-')), 'policy.yaml');
  return { path, write: (doc) => writeFileSync(path, stringify(doc)) };
}

/** The policy `prod` at `revision`, with `tenants`. */
export function policyDoc(
  revision: string,
  tenants: Record<string, unknown>,
): Record<string, unknown> {
  return {
    name: 'prod',
    policy_revision: revision,
    admission: { type: 'goodput' },
    dispatch: { type: 'flow-control' },
    routing: { type: 'least-request' },
    tenants,
  };
}
