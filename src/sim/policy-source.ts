/**
 * Finds a policy by name or path: a preset name, or a YAML/JSON file validated against the
 * policy schema. A file's validation errors are prefixed with the file name.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { ConfigError, isConfigError } from '../core/errors.ts';
import { resolvePolicy, type ResolvedPolicy } from '../core/config/policy.ts';
import { PRESETS, presetPolicy } from '../core/config/presets.ts';

export function loadPolicy(nameOrPath: string): ResolvedPolicy {
  if (Object.hasOwn(PRESETS, nameOrPath)) return presetPolicy(nameOrPath);
  if (!existsSync(nameOrPath)) return presetPolicy(nameOrPath);
  let doc: unknown;
  try {
    doc = parse(readFileSync(nameOrPath, 'utf8'));
  } catch (e) {
    throw new ConfigError(nameOrPath, 'a YAML or JSON policy document', (e as Error).message);
  }
  try {
    return resolvePolicy(doc);
  } catch (e) {
    throw isConfigError(e) ? e.inFile(nameOrPath) : e;
  }
}
