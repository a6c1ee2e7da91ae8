/** A generator seeded from the OS's entropy, for live clients whose jitter must differ per process. */
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import type { Rng } from '../core/ports/rng.ts';
import { SeededRng } from './seeded-rng.ts';

export function entropyRng(): Rng {
  return new SeededRng(randomInt(0, 2 ** 31 - 1));
}

/** A random idempotency key or request id (UUID v4). */
export function randomId(): string {
  return randomUUID();
}

/** `bytes` random bytes as lowercase hex: trace and span ids. */
export function randomHex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}
