/**
 * `--adapters zipf:N:S`: each request asks for one of N LoRA adapters, `lora-0` … `lora-{N-1}`,
 * adapter k drawn with probability ∝ (k + 1)^−S, on its own random stream. Unless the engine
 * flags name its adapters (`--lora-modules`), the simulated replicas serve exactly these.
 */
import { ConfigError } from '../../core/errors.ts';
import type { Rng } from '../../core/ports/rng.ts';
import type { LlmRequest } from '../../core/request/request.ts';
import { zipfSampler } from './variates.ts';

export interface AdapterSpec {
  readonly count: number;
  readonly exponent: number;
}

const EXPECTED = '`zipf:N:S` (N adapters, an integer 1–1000, S ≥ 0)';

export function parseAdapterSpec(text: string, option = '--adapters'): AdapterSpec {
  const parts = text.trim().split(':');
  if (parts[0] !== 'zipf' || parts.length !== 3) throw new ConfigError(option, EXPECTED, text);
  const count = /^[0-9]+$/.test(parts[1]) ? Number(parts[1]) : NaN;
  const exponent = parts[2].trim() === '' ? NaN : Number(parts[2]);
  if (!(count >= 1 && count <= 1_000) || !(exponent >= 0) || !Number.isFinite(exponent)) {
    throw new ConfigError(option, EXPECTED, text);
  }
  return { count, exponent };
}

export function formatAdapterSpec(spec: AdapterSpec): string {
  return `zipf:${spec.count}:${spec.exponent}`;
}

export function adapterNames(spec: AdapterSpec): string[] {
  return Array.from({ length: spec.count }, (_, k) => `lora-${k}`);
}

/** `requests`, each asking for an adapter drawn from `spec` on `rng` (re-iterable, lazily). */
export function withAdapters(
  requests: Iterable<LlmRequest>,
  spec: AdapterSpec,
  rng: () => Rng,
): Iterable<LlmRequest> {
  const names = adapterNames(spec);
  return {
    *[Symbol.iterator]() {
      const pick = zipfSampler(spec.count, spec.exponent, rng());
      for (const r of requests) yield { ...r, adapter: names[pick()] };
    },
  };
}
