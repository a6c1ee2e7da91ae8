/**
 * Virtual token counters (VTC, Sheng et al., "Fairness in Serving Large Language Models", OSDI
 * 2024), weighted: each tenant's counter is the service it has received, in weighted tokens,
 * divided by its weight. The queue serves the backlogged tenant with the smallest counter, so
 * over any stretch in which two tenants are both backlogged their weighted service differs by at
 * most a couple of requests' worth (the bound in ./README.md) — whatever their request lengths.
 *
 * Charges: `inputWeight` per prompt token when the prefill starts (uncached tokens only, unless
 * the cost says otherwise) and `outputWeight` per output token as it is generated, so output
 * length need not be known ahead; optionally `kvGibSecondWeight` per GiB-second of KV cache held. A tenant that becomes backlogged again is lifted to at least
 * the smallest counter among the backlogged (or, with none, to the counter of the tenant served
 * last): idle time earns no credit to spend later in a burst.
 */
import type { Tokens } from '../request/units.ts';

/** What a unit of service costs; `revision` labels the metrics it produces. */
export interface ServiceCost {
  readonly revision: string;
  /** Weight of one prompt token (VTC's w_p). */
  readonly inputWeight: number;
  /** Weight of one generated token (VTC's w_q). */
  readonly outputWeight: number;
  /** Charge prompt tokens served from the prefix cache too (false: only those computed). */
  readonly chargeCachedInput: boolean;
  /** Weight of one GiB of KV cache held for one second (0: memory held is free). */
  readonly kvGibSecondWeight: number;
}

export const DEFAULT_SERVICE_COST: ServiceCost = {
  revision: 'vtc-1',
  inputWeight: 1,
  outputWeight: 2,
  chargeCachedInput: false,
  kvGibSecondWeight: 0,
};

/** A tenant's counter, kept by a request so charging a token costs no lookup. */
export type TenantAccount = TenantCounter;

interface TenantCounter {
  /** Weighted service received over the tenant's weight, plus every lift. */
  counter: number;
  /** Weighted service received (no lifts, no division): what the tenant actually got. */
  service: number;
  weight: number;
  backlogged: boolean;
  /**
   * The queues it has work waiting in: one counter serves every priority band's queue, so the
   * tenant is idle only once all of them have emptied.
   */
  queues: number;
}

export class VirtualTokenCounters {
  readonly cost: ServiceCost;
  private readonly tenants = new Map<string, TenantCounter>();
  private readonly weightOf: (tenant: string) => number;
  private backloggedCount = 0;
  /** Counter of the tenant charged last: the floor for a tenant arriving at an empty queue. */
  private lastServed = 0;

  constructor(cost: ServiceCost, weightOf: (tenant: string) => number) {
    this.cost = cost;
    this.weightOf = weightOf;
  }

  /** The tenant's counter (0 for one never seen). */
  counter(tenant: string): number {
    return this.tenants.get(tenant)?.counter ?? 0;
  }

  /** Weighted service the tenant has received (not divided by its weight). */
  service(tenant: string): number {
    return this.tenants.get(tenant)?.service ?? 0;
  }

  weight(tenant: string): number {
    return this.of(tenant).weight;
  }

  /** Every tenant seen, with its counter and service. */
  *entries(): Generator<{ tenant: string; counter: number; service: number; weight: number }> {
    for (const [tenant, c] of this.tenants) yield { tenant, ...c };
  }

  /** The smallest counter among backlogged tenants; `lastServed` when none is. */
  floor(): number {
    if (this.backloggedCount === 0) return this.lastServed;
    let min = Infinity;
    for (const c of this.tenants.values()) if (c.backlogged && c.counter < min) min = c.counter;
    return min;
  }

  /** The tenant now has work waiting in one more queue; lifted to the floor if it had none. */
  backlog(tenant: string): void {
    const c = this.of(tenant);
    c.queues++;
    if (c.backlogged) return;
    c.counter = Math.max(c.counter, this.floor());
    c.backlogged = true;
    this.backloggedCount++;
  }

  /** One of the tenant's queues has emptied: it is idle once none has work. */
  idle(tenant: string): void {
    const c = this.tenants.get(tenant);
    if (c === undefined || !c.backlogged) return;
    c.queues = Math.max(0, c.queues - 1);
    if (c.queues > 0) return;
    c.backlogged = false;
    this.backloggedCount--;
  }

  /**
   * Each tenant's weight again, as `weightOf` now gives it (a reloaded policy). What a tenant was
   * charged stays in its counter; its service from now on is divided by the new weight.
   */
  reweigh(): void {
    for (const [tenant, c] of this.tenants) c.weight = this.weightOf(tenant);
  }

  /** The tenant's account, to charge through without a lookup. */
  account(tenant: string): TenantAccount {
    return this.of(tenant);
  }

  /** A prefill starts: `tokens` prompt tokens, `cached` of them from the prefix cache. */
  chargeInput(tenant: string | TenantAccount, tokens: Tokens, cached: Tokens): void {
    const billed = this.cost.chargeCachedInput ? tokens : Math.max(0, tokens - cached);
    this.charge(tenant, this.cost.inputWeight * billed);
  }

  /** `tokens` more output tokens were generated. */
  chargeOutput(tenant: string | TenantAccount, tokens: Tokens): void {
    if (tokens > 0) this.charge(tenant, this.cost.outputWeight * tokens);
  }

  /** `gibSeconds` of KV cache held (GiB × seconds). */
  chargeKv(tenant: string | TenantAccount, gibSeconds: number): void {
    if (this.cost.kvGibSecondWeight > 0 && gibSeconds > 0) {
      this.charge(tenant, this.cost.kvGibSecondWeight * gibSeconds);
    }
  }

  /** What a request of this size is expected to cost its tenant's counter (for wait estimates). */
  expectedCharge(tenant: string, uncachedInput: Tokens, expectedOutput: Tokens): number {
    return (
      (this.cost.inputWeight * uncachedInput + this.cost.outputWeight * expectedOutput) /
      this.of(tenant).weight
    );
  }

  private charge(tenant: string | TenantAccount, weighted: number): void {
    const c = typeof tenant === 'string' ? this.of(tenant) : tenant;
    c.service += weighted;
    c.counter += weighted / c.weight;
    this.lastServed = c.counter;
  }

  private of(tenant: string): TenantCounter {
    let c = this.tenants.get(tenant);
    if (c === undefined) {
      c = { counter: 0, service: 0, weight: this.weightOf(tenant), backlogged: false, queues: 0 };
      this.tenants.set(tenant, c);
    }
    return c;
  }
}
