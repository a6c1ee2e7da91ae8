/**
 * Resolves which timing profile a replica runs: a `const:` spec, a named fitted profile
 * (`llama-3-8b/h100/tp1`), or by default the fitted profile for the replica's model, GPU and TP.
 * Fitted profiles are the committed JSON files in data/profiles (see its SOURCE.md). Main rule:
 * an unknown name or combination is a ConfigError that lists what is available — never a
 * silent substitute.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { ConfigError } from '../../core/errors.ts';
import { isConstSpec, parseConstProfile } from './const-profile.ts';
import { FittedProfile } from './fitted-profile.ts';
import type { TimingProfile } from './profile.ts';

export const PROFILES_DIR = fileURLToPath(new URL('../../../data/profiles/', import.meta.url));

const FILE = /^(.+)-([a-z0-9]+)-tp(\d+)\.json$/;
const NAME = /^([^/]+)\/([^/]+)\/tp(\d+)$/;

export interface ProfileRequest {
  /** `const:…`, a profile name like `llama-3-8b/h100/tp1`, or absent for the default. */
  readonly profile?: string;
  readonly model: string;
  readonly gpu: string;
  readonly tp: number;
}

export function profileName(model: string, gpu: string, tp: number): string {
  return `${model}/${gpu}/tp${tp}`;
}

/** Names of the committed fitted profiles, sorted. */
export function listProfiles(): string[] {
  return readdirSync(PROFILES_DIR)
    .map((f) => FILE.exec(f))
    .filter((m) => m !== null)
    .map((m) => profileName(m[1], m[2], Number(m[3])))
    .sort();
}

const loaded = new Map<string, FittedProfile>();

/** Loads a committed fitted profile by name; profiles are immutable, so each loads once. */
export function loadFittedProfile(name: string): FittedProfile {
  const cached = loaded.get(name);
  if (cached !== undefined) return cached;
  const m = NAME.exec(name);
  const available = listProfiles();
  if (m === null || !available.includes(name)) {
    throw new ConfigError('profile', `"const:…" or one of ${available.join(', ')}`, name);
  }
  const file = join(PROFILES_DIR, `${m[1]}-${m[2]}-tp${m[3]}.json`);
  const profile = FittedProfile.fromJson(JSON.parse(readFileSync(file, 'utf8')), file);
  if (profile.name !== name)
    throw new Error(`${file}: name: expected "${name}", got "${profile.name}"`);
  loaded.set(name, profile);
  return profile;
}

export function resolveProfile(opts: ProfileRequest): TimingProfile {
  const spec = opts.profile?.trim();
  if (spec !== undefined && spec !== '') {
    return isConstSpec(spec) ? parseConstProfile(spec) : loadFittedProfile(spec);
  }
  const name = profileName(opts.model, opts.gpu, opts.tp);
  if (!listProfiles().includes(name)) {
    throw new ConfigError(
      'profile',
      `a model/gpu/tp with a fitted profile (${listProfiles().join(', ')}) or a "const:…" profile`,
      name,
    );
  }
  return loadFittedProfile(name);
}
