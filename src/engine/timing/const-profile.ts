/**
 * The `const` timing profile: step times from a spec string instead of measured data, for
 * tests and what-ifs where exact, hand-checkable numbers matter more than fidelity.
 *
 *   const:step_ms=X                                  every non-empty step takes exactly X ms
 *   const:prefill_ms_per_token=P,decode_step_ms=D    a non-empty step takes D + P × prefillTokens
 *
 * D is the per-iteration cost (weights read once per step, whatever the step holds); P the cost
 * of each prompt token. An empty step takes 0. Main rule: the spec is parsed strictly — an
 * unknown or repeated key, a missing key or a bad number is a ConfigError naming `profile`.
 */
import { ConfigError } from '../../core/errors.ts';
import type { Ms } from '../../core/request/units.ts';
import type { StepShape, TimingProfile } from './profile.ts';

export const CONST_PREFIX = 'const:';

const KEYS = ['step_ms', 'prefill_ms_per_token', 'decode_step_ms'] as const;
type Key = (typeof KEYS)[number];

const NUMBER = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;

const FORMS = 'const:step_ms=<ms> or const:prefill_ms_per_token=<ms>,decode_step_ms=<ms>';

export class ConstProfile implements TimingProfile {
  readonly name: string;
  private readonly fixedMs: number;
  private readonly perPrefillTokenMs: number;

  constructor(name: string, fixedMs: number, perPrefillTokenMs: number) {
    this.name = name;
    this.fixedMs = fixedMs;
    this.perPrefillTokenMs = perPrefillTokenMs;
  }

  stepMs(s: StepShape): Ms {
    if (s.prefillTokens <= 0 && s.decodeSeqs <= 0) return 0;
    return this.fixedMs + this.perPrefillTokenMs * s.prefillTokens;
  }
}

export function isConstSpec(spec: string): boolean {
  return spec.startsWith(CONST_PREFIX);
}

export function parseConstProfile(spec: string): ConstProfile {
  if (!isConstSpec(spec))
    throw new ConfigError('profile', `a spec starting with "${CONST_PREFIX}"`, spec);
  const body = spec.slice(CONST_PREFIX.length);
  if (body.trim() === '') throw new ConfigError('profile', FORMS, spec);
  const values = new Map<Key, number>();
  for (const part of body.split(',')) {
    const eq = part.indexOf('=');
    const key = (eq < 0 ? part : part.slice(0, eq)).trim();
    const text = eq < 0 ? '' : part.slice(eq + 1).trim();
    if (!(KEYS as readonly string[]).includes(key)) {
      throw new ConfigError('profile', `a key among ${KEYS.join(', ')}`, part);
    }
    if (values.has(key as Key)) throw new ConfigError('profile', `${key} given once`, part);
    // 1e400 reads as Infinity: a step no run could end.
    if (!NUMBER.test(text) || !Number.isFinite(Number(text)))
      throw new ConfigError('profile', `${key}=<a number ≥ 0>`, part);
    values.set(key as Key, Number(text));
  }
  const step = values.get('step_ms');
  if (step !== undefined) {
    if (values.size > 1) throw new ConfigError('profile', `step_ms alone (${FORMS})`, spec);
    if (step <= 0) throw new ConfigError('profile', 'step_ms > 0', `step_ms=${step}`);
    return new ConstProfile(`${CONST_PREFIX}step_ms=${step}`, step, 0);
  }
  const perToken = values.get('prefill_ms_per_token');
  const decode = values.get('decode_step_ms');
  if (perToken === undefined || decode === undefined) throw new ConfigError('profile', FORMS, spec);
  // A decode-only step must still take time, or a replica would emit tokens in zero time forever.
  if (decode <= 0)
    throw new ConfigError('profile', 'decode_step_ms > 0', `decode_step_ms=${decode}`);
  return new ConstProfile(
    `${CONST_PREFIX}prefill_ms_per_token=${perToken},decode_step_ms=${decode}`,
    decode,
    perToken,
  );
}
