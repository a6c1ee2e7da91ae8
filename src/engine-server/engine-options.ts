/**
 * What a simulated engine server is: the engine it runs (model, hardware, vLLM's limits — see
 * `EngineSpec`), the name it serves, the seed, and the faults it injects. Main rule: a bad value
 * is a ConfigError naming the option and the value — never a silent default.
 */
import { ConfigError } from '../core/errors.ts';
import type { EngineConfig } from '../engine/engine-types.ts';
import {
  ENGINE_DEFAULTS,
  buildEngineConfig,
  buildEngineProfile,
  type EngineSpec,
} from '../engine/engine-spec.ts';
import type { TimingProfile } from '../engine/timing/profile.ts';
import type { FaultRates } from './request-plan.ts';
import type { ImageTokens } from '../openai/image-size.ts';

export interface EngineServerSpec extends EngineSpec {
  /** What /v1/models lists and requests must name; default: the model. */
  readonly servedModelName?: string;
  readonly seed: number;
  readonly faults: FaultRates;
  /** Request bodies above this are answered 413. */
  readonly maxBodyBytes: number;
  /** The prompt tokens an image takes in its model (image-size.ts); absent: it takes none. */
  readonly imageTokens?: ImageTokens;
}

export const ENGINE_SERVER_DEFAULTS: EngineServerSpec = {
  ...ENGINE_DEFAULTS,
  seed: 0,
  faults: { failRate: 0, stallRate: 0, stallMs: 0, crashRate: 0 },
  maxBodyBytes: 4 * 1024 * 1024,
};

export interface ResolvedEngine {
  readonly config: EngineConfig;
  readonly profile: TimingProfile;
  readonly servedModelName: string;
}

export function resolveEngine(spec: EngineServerSpec): ResolvedEngine {
  const config = buildEngineConfig(spec);
  for (const key of ['failRate', 'stallRate', 'crashRate'] as const) {
    const v = spec.faults[key];
    if (!(v >= 0 && v <= 1)) throw new ConfigError(`faults.${key}`, 'a number in [0, 1]', v);
  }
  if (!(spec.faults.stallMs >= 0))
    throw new ConfigError('faults.stallMs', 'a number ≥ 0', spec.faults.stallMs);
  const served = spec.servedModelName ?? spec.model;
  if (served.trim() === '') throw new ConfigError('servedModelName', 'a non-empty name', served);
  const image = spec.imageTokens;
  if (image?.rule === 'fixed' && !(Number.isSafeInteger(image.tokens) && image.tokens >= 1))
    throw new ConfigError('imageTokens', 'an integer ≥ 1', image.tokens);
  return { config, profile: buildEngineProfile(spec), servedModelName: served };
}
