/**
 * Who sends each request, from the `--tenants` spec: a single tenant name (`default`), or
 * `zipf:N:S`, N tenants `tenant-0` … `tenant-{N-1}` where tenant k is drawn with probability
 * ∝ 1/(k+1)^S, so tenant-0 is the heaviest (S = 0 is uniform). Real multi-tenant traffic is
 * dominated by a few tenants, which is what fairness policies must cope with.
 */
import { zipfSampler } from './variates.ts';
import { ConfigError } from '../../core/errors.ts';
import type { Rng } from '../../core/ports/rng.ts';

export type TenantSpec =
  | { readonly kind: 'single'; readonly name: string }
  | { readonly kind: 'zipf'; readonly count: number; readonly exponent: number };

const EXPECTED = 'a tenant name ([A-Za-z0-9_.-]+) or `zipf:N:S` (N an integer 1–1000000, S ≥ 0)';
const NAME = /^[A-Za-z0-9_.-]+$/;
const MAX_TENANTS = 1_000_000;

export function parseTenantSpec(text: string, option = '--tenants'): TenantSpec {
  const s = text.trim();
  if (NAME.test(s)) return { kind: 'single', name: s };
  const parts = s.split(':');
  if (parts[0] !== 'zipf' || parts.length !== 3) throw new ConfigError(option, EXPECTED, text);
  const count = /^[0-9]+$/.test(parts[1]) ? Number(parts[1]) : NaN;
  const exponent = parts[2].trim() === '' ? NaN : Number(parts[2]);
  if (!(count >= 1 && count <= MAX_TENANTS) || !(exponent >= 0) || !Number.isFinite(exponent)) {
    throw new ConfigError(option, EXPECTED, text);
  }
  return { kind: 'zipf', count, exponent };
}

export function formatTenantSpec(spec: TenantSpec): string {
  return spec.kind === 'single' ? spec.name : `zipf:${spec.count}:${spec.exponent}`;
}

export function tenantName(index: number): string {
  return `tenant-${index}`;
}

/** One tenant per call; a single tenant draws nothing from `rng`. */
export function tenantSampler(spec: TenantSpec, rng: Rng): () => string {
  if (spec.kind === 'single') {
    const { name } = spec;
    return () => name;
  }
  const names = Array.from({ length: spec.count }, (_, k) => tenantName(k));
  const index = zipfSampler(spec.count, spec.exponent, rng);
  return () => names[index()];
}
