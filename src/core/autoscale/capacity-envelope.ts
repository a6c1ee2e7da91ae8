/**
 * A capacity envelope: one replica group's measured rate at SLO for a workload mix, as
 * `goodput capacity` finds it (simulated or live), in a file the autoscaler loads. Loaded, it
 * replaces the step-time model's rate as the goodput controller's C — measured beats predicted
 * — and follows the mix as the model does: for a mix other than the one measured, the measured
 * rate is scaled by the model's own ratio between the two mixes. Streams stay the model's.
 */
import { z } from 'zod';
import { parseOrThrow } from '../config/validate.ts';
import { ConfigError } from '../errors.ts';
import type { GroupCapacity } from './scale-window.ts';

const positive = z.number().positive();

export const ENVELOPE_KIND = 'goodput-capacity-envelope';

const envelopeSchema = z.object({
  kind: z.literal(ENVELOPE_KIND),
  version: z.literal(1),
  /** Requests per second per group at the target attainment. */
  rate_per_group_rps: positive,
  target: z.number().gt(0).lte(1),
  mix: z.object({ input_mean: positive, output_mean: positive }),
  groups: z.int().positive(),
  source: z.string(),
  /** The engine a simulated probe ran; null for a live one (what served it is not known). */
  engine: z
    .object({
      model: z.string(),
      gpu: z.string(),
      tp: z.int().positive(),
      engine_version: z.string().nullable(),
    })
    .nullable()
    .optional(),
});

export type CapacityEnvelope = z.infer<typeof envelopeSchema>;

/** Checks a parsed envelope file; a bad one is a ConfigError naming the field (and `file`). */
export function parseEnvelope(doc: unknown, file?: string): CapacityEnvelope {
  try {
    return parseOrThrow(envelopeSchema.loose(), doc);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    throw new ConfigError(e.path, e.expected, e.got, file);
  }
}

/** The engine a host plans with: the one an envelope must have been measured on. */
export interface EnvelopeEngine {
  readonly model: string;
  readonly gpu: string;
  readonly tp: number;
  readonly engineVersion: string;
}

/**
 * Where `envelope` was measured on another engine than `engine` (model, GPU, TP or engine
 * version), the engine it was measured on, as `model/gpu/tpN vVERSION`; undefined where it fits
 * or does not say (a live probe's).
 */
export function otherEngine(
  envelope: CapacityEnvelope,
  engine: EnvelopeEngine,
): string | undefined {
  const e = envelope.engine;
  if (e === null || e === undefined) return undefined;
  const version = e.engine_version ?? engine.engineVersion;
  const same =
    e.model === engine.model &&
    e.gpu === engine.gpu &&
    e.tp === engine.tp &&
    version === engine.engineVersion;
  return same ? undefined : `${e.model}/${e.gpu}/tp${e.tp} ${version}`;
}

/** The model's capacity, with its rate anchored to the envelope's measurement. */
export function envelopeCapacity(
  model: (input: number, output: number) => GroupCapacity,
  envelope: CapacityEnvelope,
): (input: number, output: number) => GroupCapacity {
  const at = model(envelope.mix.input_mean, envelope.mix.output_mean);
  const scale = at.rps > 0 ? envelope.rate_per_group_rps / at.rps : 1;
  return (input, output) => {
    const m = model(input, output);
    return { rps: m.rps * scale, streams: m.streams };
  };
}

/** `model` anchored to `envelope` when there is one. */
export function withEnvelope(
  model: (input: number, output: number) => GroupCapacity,
  envelope: CapacityEnvelope | undefined,
): (input: number, output: number) => GroupCapacity {
  return envelope === undefined ? model : envelopeCapacity(model, envelope);
}
