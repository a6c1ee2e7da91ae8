/**
 * Parsers for numeric command-line flags. Each failure is a ConfigError naming the flag and the
 * value given, so `--rate abc` reads `--rate: expected a number > 0, got "abc"`.
 */
import { ConfigError } from '../core/errors.ts';

export function positiveNumber(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n <= 0)
      throw new ConfigError(flag, 'a number > 0', value);
    return n;
  };
}

/** A number > 0 and at most `max`: past it, what it multiplies overflows or never ends. */
export function positiveAtMost(flag: string, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !(n > 0 && n <= max)) {
      throw new ConfigError(flag, `a number > 0 and ≤ ${max.toLocaleString('en-US')}`, value);
    }
    return n;
  };
}

/**
 * A finite number of at least `min` (> 0): below it, a run's clock grows past where a step's
 * milliseconds still add to it.
 */
export function numberAtLeast(flag: string, min: number) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !(n >= min && Number.isFinite(n)))
      throw new ConfigError(flag, `a number ≥ ${min}`, value);
    return n;
  };
}

/** The least rate, requests/s (one a fortnight): a run of 1,000 then spans 32 years. */
export const MIN_RATE = 0.000001;

/** A rate: a number of at least `MIN_RATE`, or `inf` (vLLM's spelling) for everything at once. */
export function positiveRate(flag: string) {
  const finite = numberAtLeast(flag, MIN_RATE);
  return (value: string): number => {
    if (value === 'inf' || value === 'Infinity') return Infinity;
    try {
      return finite(value);
    } catch {
      throw new ConfigError(flag, `a number ≥ ${MIN_RATE}, or inf`, value);
    }
  };
}

export function nonNegativeNumber(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n < 0)
      throw new ConfigError(flag, 'a number ≥ 0', value);
    return n;
  };
}

export function positiveInt(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1)
      throw new ConfigError(flag, 'an integer ≥ 1', value);
    return n;
  };
}

export function nonNegativeInt(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n))
      throw new ConfigError(flag, 'an integer ≥ 0', value);
    return n;
  };
}

export function fraction(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !(n > 0 && n <= 1))
      throw new ConfigError(flag, 'a number in (0, 1]', value);
    return n;
  };
}

export function oneOf<T extends string>(flag: string, choices: readonly T[]) {
  return (value: string): T => {
    if (!(choices as readonly string[]).includes(value))
      throw new ConfigError(flag, `one of ${choices.join(', ')}`, value);
    return value as T;
  };
}

export function portNumber(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || n > 65_535)
      throw new ConfigError(flag, 'a port number in [0, 65535] (0: any free port)', value);
    return n;
  };
}

/** A Redis server's URL, `redis://[user:password@]host[:port][/db]` (or `rediss://`, TLS). */
export function redisUrl(flag: string) {
  return (value: string): string => {
    const expected = 'a Redis URL, redis://host:port';
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new ConfigError(flag, expected, value);
    }
    if ((url.protocol !== 'redis:' && url.protocol !== 'rediss:') || url.hostname === '')
      throw new ConfigError(flag, expected, value);
    return value;
  };
}

export function nonEmpty(flag: string) {
  return nonEmptyAs(flag, 'a non-empty name');
}

/** A value that must not be empty, `expected` saying what it is. */
export function nonEmptyAs(flag: string, expected: string) {
  return (value: string): string => {
    if (value.trim() === '') throw new ConfigError(flag, expected, value);
    return value;
  };
}

/** An address to listen on: given, never empty (which Node takes for every interface). */
export function listenHost(flag: string) {
  return (value: string): string => {
    if (value.trim() === '') {
      throw new ConfigError(flag, 'an address to listen on (0.0.0.0 for every interface)', value);
    }
    return value;
  };
}

/** A window of seconds `FROM-TO`, FROM < TO, both ≥ 0: `--scale-freeze 1800-2400`. */
export function secondsWindow(flag: string, value: string): { fromS: number; toS: number } {
  const m = /^\s*(\d+(?:\.\d+)?)\s*-\s*(\d+(?:\.\d+)?)\s*$/.exec(value);
  const fromS = m === null ? NaN : Number(m[1]);
  const toS = m === null ? NaN : Number(m[2]);
  if (!(fromS < toS))
    throw new ConfigError(flag, 'seconds FROM-TO with FROM < TO, e.g. 1800-2400', value);
  return { fromS, toS };
}

/**
 * The most replicas (or groups) a fleet may be given: far past any one pool's, and within what
 * a simulated or embedded fleet of them holds in memory (about 14 KB each).
 */
export const MAX_REPLICAS = 10_000;

/** A count of replicas, 1 to `MAX_REPLICAS`. */
export function replicaCount(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || n < 1 || n > MAX_REPLICAS)
      throw new ConfigError(flag, `an integer in [1, ${MAX_REPLICAS}]`, value);
    return n;
  };
}

/** `N` or `MIN-MAX`: a count of replica groups, or the range autoscaling keeps it in. */
export function groupRange(flag: string) {
  return (value: string): { min: number; max: number } => {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(value);
    const min = m === null ? NaN : Number(m[1]);
    const max = m === null ? NaN : Number(m[2] ?? m[1]);
    if (!(min >= 1 && max >= min && max <= MAX_REPLICAS))
      throw new ConfigError(
        flag,
        `N or MIN-MAX groups, 1 ≤ MIN ≤ MAX ≤ ${MAX_REPLICAS}, e.g. 2 or 1-8`,
        value,
      );
    return { min, max };
  };
}

/** A repeatable flag: each value parsed, all of them kept in order. */
export function repeated<T>(parse: (value: string) => T) {
  return (value: string, prev: T[] | undefined): T[] => [...(prev ?? []), parse(value)];
}
