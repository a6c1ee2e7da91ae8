/**
 * Finds a policy by name or path: a preset name, or a YAML/JSON file validated against the
 * policy schema. A file's validation errors are prefixed with the file name.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { ConfigError, isConfigError } from '../core/errors.ts';
import { resolvePolicy, type ResolvedPolicy } from '../core/config/policy.ts';
import { PRESETS, presetPolicy } from '../core/config/presets.ts';

/** A policy with the document it was read from, and its file (none for a preset). */
export interface LoadedPolicy {
  readonly policy: ResolvedPolicy;
  readonly doc: Readonly<Record<string, unknown>>;
  readonly file: string | undefined;
}

export function loadPolicy(nameOrPath: string): ResolvedPolicy {
  return readPolicy(nameOrPath).policy;
}

export function readPolicy(nameOrPath: string): LoadedPolicy {
  if (Object.hasOwn(PRESETS, nameOrPath) || !existsSync(nameOrPath)) {
    const policy = presetPolicy(nameOrPath);
    return { policy, doc: PRESETS[nameOrPath], file: undefined };
  }
  return readPolicyFile(nameOrPath);
}

/** The policy in the YAML or JSON file at `path`. */
export function readPolicyFile(path: string): LoadedPolicy {
  let doc: unknown;
  try {
    doc = parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new ConfigError(path, 'a YAML or JSON policy document', (e as Error).message);
  }
  try {
    const policy = resolvePolicy(doc);
    return { policy, doc: doc as Record<string, unknown>, file: path };
  } catch (e) {
    throw isConfigError(e) ? e.inFile(path) : e;
  }
}
