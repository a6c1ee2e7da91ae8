/**
 * Priority is a contract, not unlimited pre-emption. Each class (its band) may reserve a minimum
 * share of the work dispatched, cap its burst at a maximum share while others wait, age toward
 * the front as its oldest request waits, and bound how long any of its requests may starve.
 * `ShareMeter` measures the shares: work dispatched per band (weighted tokens expected), decayed
 * with a half-life, over the work of all bands. The dispatcher applies the contract
 * (../dispatch/README.md, "Class contracts").
 */
import type { Ms } from '../request/units.ts';

export interface ClassContract {
  /** Share of dispatched work reserved for the band while it has work waiting (0–1). */
  readonly minShare: number;
  /** Above this share the band yields to any other band with work waiting (0–1). */
  readonly maxShare: number;
  /** Every this many ms its oldest request has waited lifts the band one priority up. */
  readonly agingMs?: Ms;
  /** A request that has waited this long is dispatched ahead of every band. */
  readonly starvationMs?: Ms;
}

export const NO_CONTRACT: ClassContract = { minShare: 0, maxShare: 1 };

/** Why a request left ahead of a band with higher priority, or `priority` when none did. */
export const PASS_REASONS = ['starvation', 'min_share', 'aging', 'max_share'] as const;
export type PassReason = (typeof PASS_REASONS)[number];

/** Half-life of the work a share is measured over. */
const HALF_LIFE_MS = 10_000;

export class ShareMeter {
  private readonly work = new Map<number, { value: number; atMs: Ms }>();

  /** `amount` of work dispatched from band `key` at `nowMs`. */
  add(key: number, amount: number, nowMs: Ms): void {
    const w = this.decayed(key, nowMs);
    w.value += amount;
  }

  /** Band `key`'s share of recent work (0 when nothing was dispatched lately). */
  share(key: number, nowMs: Ms): number {
    let total = 0;
    for (const k of this.work.keys()) total += this.decayed(k, nowMs).value;
    return total > 0 ? this.decayed(key, nowMs).value / total : 0;
  }

  private decayed(key: number, nowMs: Ms): { value: number; atMs: Ms } {
    let w = this.work.get(key);
    if (w === undefined) {
      w = { value: 0, atMs: nowMs };
      this.work.set(key, w);
    } else if (nowMs > w.atMs) {
      w.value *= 2 ** (-(nowMs - w.atMs) / HALF_LIFE_MS);
      w.atMs = nowMs;
    }
    return w;
  }
}
