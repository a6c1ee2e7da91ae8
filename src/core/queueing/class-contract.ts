/**
 * Priority is a contract, not unlimited pre-emption. Each class (its band) may reserve a minimum
 * share of the work dispatched, cap its burst at a maximum share while others wait, age toward
 * the front as its oldest request waits, and bound how long any of its requests may starve.
 * `ShareMeter` measures the shares: work dispatched per band (weighted tokens expected), decayed
 * with a half-life, over the work of all bands. `ContractBook` judges a band against its
 * contract and keeps the account of what was dispatched ahead of whom; the dispatcher applies
 * it (../dispatch/README.md, "Class contracts").
 */
import type { Ms } from '../request/units.ts';
import type { ClassContract } from '../request/slo-classes.ts';

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

/** A band as the contracts see it. */
export interface ContractBand {
  readonly priority: number;
  readonly contract: ClassContract;
}

/**
 * The class contracts' judgement and accounts: which contract lets a band go before the highest
 * band with work, which band is past its maximum share, the work each class got, and every
 * dispatch made ahead of a band with work waiting, by the contract that allowed it (`phase`,
 * set by the dispatcher while it applies one) or none (`priority`: an inversion).
 */
export class ContractBook {
  readonly shares = new ShareMeter();
  /** Work dispatched per class over the whole run (weighted tokens expected). */
  readonly workByClass = new Map<string, number>();
  readonly passes: Record<PassReason | 'priority', number> = {
    starvation: 0,
    min_share: 0,
    aging: 0,
    max_share: 0,
    priority: 0,
  };
  /** The contract being applied while the dispatcher places (null: strict priority). */
  phase: PassReason | null = null;

  /**
   * Which contract, if any, lets `b` go before the band of priority `firstPriority` (the highest
   * with work) now; `waitedMs`, how long its oldest request has waited.
   */
  passReason(b: ContractBand, firstPriority: number, waitedMs: Ms, nowMs: Ms): PassReason | null {
    const c = b.contract;
    if (c.starvationMs !== undefined && waitedMs >= c.starvationMs) return 'starvation';
    if (c.minShare > 0 && this.shares.share(b.priority, nowMs) < c.minShare) return 'min_share';
    if (c.agingMs !== undefined && b.priority - Math.floor(waitedMs / c.agingMs) <= firstPriority) {
      return 'aging';
    }
    return null;
  }

  /** Whether any contract term can move `b` ahead of strict priority at all. */
  static binds(c: ClassContract): boolean {
    return c.minShare > 0 || c.starvationMs !== undefined || c.agingMs !== undefined;
  }

  overMax(b: ContractBand, nowMs: Ms): boolean {
    return b.contract.maxShare < 1 && this.shares.share(b.priority, nowMs) > b.contract.maxShare;
  }

  /** `work` of class `cls` left band `band`; `passed`: a band above still had work waiting. */
  dispatched(band: number, cls: string, work: number, passed: boolean, nowMs: Ms): void {
    this.shares.add(band, work, nowMs);
    this.workByClass.set(cls, (this.workByClass.get(cls) ?? 0) + work);
    if (passed) this.passes[this.phase ?? 'priority']++;
  }
}
