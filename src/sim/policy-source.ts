/**
 * Finds a policy by name or path: a preset name, or a YAML/JSON file validated against the
 * policy schema. A file's validation errors are prefixed with the file name; a value that is
 * neither a preset nor a file it can read is refused by the flag that gave it, with the reason.
 */
import { readFileSync } from 'node:fs';
import { isPair, isScalar, parseDocument, visit } from 'yaml';
import { ConfigError, isConfigError } from '../core/errors.ts';
import { resolvePolicy, type ResolvedPolicy } from '../core/config/policy.ts';
import { PRESETS, presetPolicy } from '../core/config/presets.ts';

/** A policy with the document it was read from, and its file (none for a preset). */
export interface LoadedPolicy {
  readonly policy: ResolvedPolicy;
  readonly doc: Readonly<Record<string, unknown>>;
  readonly file: string | undefined;
}

/** The policy `nameOrPath` names, given by `flag` (what an error names it by). */
export function loadPolicy(nameOrPath: string, flag = '--policy'): ResolvedPolicy {
  return readPolicy(nameOrPath, flag).policy;
}

/** The preset `nameOrPath` names, else the policy in that file, given by `flag`. */
export function readPolicy(nameOrPath: string, flag = '--policy'): LoadedPolicy {
  if (Object.hasOwn(PRESETS, nameOrPath)) {
    const policy = presetPolicy(nameOrPath);
    return { policy, doc: PRESETS[nameOrPath], file: undefined };
  }
  let text: string;
  try {
    text = readFileSync(nameOrPath, 'utf8');
  } catch (e) {
    const presets = Object.keys(PRESETS).join(', ');
    const expected = `a preset (${presets}) or a readable policy file (${readFailure(e)})`;
    throw new ConfigError(flag, expected, nameOrPath);
  }
  return policyFromText(text, nameOrPath);
}

/** The policy in the YAML or JSON file at `path`. */
export function readPolicyFile(path: string): LoadedPolicy {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError(path, 'a YAML or JSON policy document', (e as Error).message);
  }
  return policyFromText(text, path);
}

/** Why a file could not be read, as the OS says it, without the call and path node adds. */
function readFailure(e: unknown): string {
  const { code, message } = e as NodeJS.ErrnoException;
  if (code === 'ENOENT') return 'no such file';
  return message.replace(/, \w+(?: '.*')?$/, '');
}

function policyFromText(text: string, path: string): LoadedPolicy {
  let doc: unknown;
  try {
    doc = parsePolicyText(text);
  } catch (e) {
    if (isConfigError(e)) throw e.inFile(path);
    throw new ConfigError(path, 'a YAML or JSON policy document', (e as Error).message);
  }
  // A file of nothing (or of comments alone) is read as null: say so, not "an object, got null".
  if (doc === null || doc === undefined) {
    throw new ConfigError(path, 'a policy document (name, admission, routing, …)', 'an empty file');
  }
  try {
    const policy = resolvePolicy(doc);
    return { policy, doc: doc as Record<string, unknown>, file: path };
  } catch (e) {
    throw isConfigError(e) ? e.inFile(path) : e;
  }
}

/**
 * A policy document's text, YAML or JSON, as data. A key given twice in one map is an error, as
 * the parser would make it; checked here in one pass, as the parser's check is quadratic in a
 * map's size (2 s of a 10,000-tenant file's 2.5).
 */
export function parsePolicyText(text: string): unknown {
  const doc = parseDocument(text, { uniqueKeys: false });
  const [error] = doc.errors;
  if (error !== undefined) throw error;
  visit(doc, {
    Map(_, map, ancestors) {
      const seen = new Set<unknown>();
      for (const { key } of map.items) {
        const name = isScalar(key) ? key.value : key;
        if (!seen.has(name)) {
          seen.add(name);
          continue;
        }
        const at = ancestors
          .filter(isPair)
          .map((p) => (isScalar(p.key) ? String(p.key.value) : '?'));
        throw new ConfigError([...at, String(name)].join('.'), 'each key once', 'it twice');
      }
    },
  });
  return doc.toJS();
}
