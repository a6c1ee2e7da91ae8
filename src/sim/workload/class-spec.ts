/**
 * Which SLO class each request carries, from the `--classes` spec: one class name
 * (`interactive`), or a weighted mix `interactive:0.7,batch:0.3` drawn per request. Weights must
 * be positive and are normalised, so `interactive:7,batch:3` is the same mix.
 */
import { ConfigError } from '../../core/errors.ts';
import type { Rng } from '../../core/ports/rng.ts';
import {
  SLO_CLASS_NAMES,
  isSloClassName,
  type SloClassName,
} from '../../core/request/slo-classes.ts';

export type ClassSpec =
  | { readonly kind: 'single'; readonly name: SloClassName }
  | {
      readonly kind: 'mix';
      readonly names: readonly SloClassName[];
      /** Normalised: positive, summing to 1. */
      readonly weights: readonly number[];
    };

const EXPECTED =
  `a class (${SLO_CLASS_NAMES.join('|')}) or a mix \`class:weight,…\` ` +
  'with positive weights and no class twice';

export function parseClassSpec(text: string, option = '--classes'): ClassSpec {
  const fail = (): never => {
    throw new ConfigError(option, EXPECTED, text);
  };
  const s = text.trim();
  if (isSloClassName(s)) return { kind: 'single', name: s };
  const names: SloClassName[] = [];
  const raw: number[] = [];
  for (const item of s.split(',')) {
    const [name, weight, extra] = item.trim().split(':');
    if (extra !== undefined || weight === undefined || weight.trim() === '') fail();
    if (!isSloClassName(name) || names.includes(name)) fail();
    const w = Number(weight);
    if (!(w > 0) || !Number.isFinite(w)) fail();
    names.push(name as SloClassName);
    raw.push(w);
  }
  const sum = raw.reduce((a, b) => a + b, 0);
  return { kind: 'mix', names, weights: raw.map((w) => w / sum) };
}

export function formatClassSpec(spec: ClassSpec): string {
  if (spec.kind === 'single') return spec.name;
  return spec.names.map((n, i) => `${n}:${round6(spec.weights[i])}`).join(',');
}

function round6(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

/** One class per call; a single class draws nothing from `rng`. */
export function classSampler(spec: ClassSpec, rng: Rng): () => SloClassName {
  if (spec.kind === 'single') {
    const { name } = spec;
    return () => name;
  }
  const { names } = spec;
  const cumulative: number[] = [];
  let total = 0;
  for (const w of spec.weights) cumulative.push((total += w));
  const last = names.length - 1;
  return () => {
    const u = rng.next() * total;
    for (let i = 0; i < last; i++) if (u < cumulative[i]) return names[i];
    return names[last];
  };
}
