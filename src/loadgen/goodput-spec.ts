/**
 * The SLO a benchmark judges requests by, as vLLM's `--goodput` takes it: `ttft:MS`,
 * `tpot:MS` and `e2el:MS` in any combination, separated by commas or spaces
 * (`ttft:2000,tpot:80` or `ttft:2000 tpot:80`). A request is good when it completed and every
 * given bound holds; TPOT of a one-token answer is 0.
 */
import { ConfigError } from '../core/errors.ts';

export interface GoodputSlo {
  readonly ttftMs?: number;
  readonly tpotMs?: number;
  readonly e2elMs?: number;
}

const KEYS = { ttft: 'ttftMs', tpot: 'tpotMs', e2el: 'e2elMs' } as const;
const EXPECTED = 'KEY:MS pairs with KEY one of ttft, tpot, e2el and MS > 0, e.g. ttft:2000,tpot:80';

export function parseGoodputSpec(spec: string, flag = '--goodput'): GoodputSlo {
  const slo: Record<string, number> = {};
  const parts = spec.split(/[\s,]+/).filter((p) => p !== '');
  if (parts.length === 0) throw new ConfigError(flag, EXPECTED, spec);
  for (const part of parts) {
    const [key, value, ...rest] = part.split(':');
    const field = KEYS[key as keyof typeof KEYS];
    const ms = Number(value);
    if (field === undefined || rest.length > 0 || value === undefined || value.trim() === '')
      throw new ConfigError(flag, EXPECTED, spec);
    if (!Number.isFinite(ms) || ms <= 0) throw new ConfigError(flag, EXPECTED, spec);
    if (slo[field] !== undefined) throw new ConfigError(flag, `${key} given once`, spec);
    slo[field] = ms;
  }
  return slo;
}

/** Whether a completed request with these latencies meets every bound the SLO sets. */
export function meetsSlo(slo: GoodputSlo, ttftMs: number, tpotMs: number, e2elMs: number): boolean {
  return (
    (slo.ttftMs === undefined || ttftMs <= slo.ttftMs) &&
    (slo.tpotMs === undefined || tpotMs <= slo.tpotMs) &&
    (slo.e2elMs === undefined || e2elMs <= slo.e2elMs)
  );
}

export function formatGoodputSpec(slo: GoodputSlo): string {
  return Object.entries(KEYS)
    .filter(([, field]) => slo[field] !== undefined)
    .map(([key, field]) => `${key}:${slo[field]}`)
    .join(',');
}
