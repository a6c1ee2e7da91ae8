/**
 * Charges each request's service to its tenant's virtual token counter as it happens: its prompt
 * when it is dispatched (its prefill starts), each output token as it streams — or the rest at
 * its end, for a host that does not report tokens — and, with a KV term in the cost, the KV
 * cache it held in between. A request keeps its tenant's account from its dispatch, so a token
 * costs no lookup on the hottest path.
 */
import type { Ms, Tokens } from '../request/units.ts';
import type { Ticket } from './ticket.ts';
import type { VirtualTokenCounters } from './virtual-token-counter.ts';

export class ServiceCharges {
  private readonly vtc: VirtualTokenCounters;
  private readonly kvBytesPerToken: number;

  constructor(vtc: VirtualTokenCounters, kvBytesPerToken: number) {
    this.vtc = vtc;
    this.kvBytesPerToken = kvBytesPerToken;
  }

  /** `t` was dispatched: its uncached prompt tokens are charged. */
  dispatched(t: Ticket<unknown>): void {
    t.account = this.vtc.account(t.req.tenant);
    this.vtc.chargeInput(t.account, t.req.inputTokens, t.hitTokens);
  }

  /** A token of `t` streamed at `nowMs` (unknown: no KV term charged). */
  token(t: Ticket<unknown>, nowMs: Ms | undefined): void {
    this.chargeKv(t, nowMs);
    this.vtc.chargeOutput(t.account ?? t.req.tenant, 1);
    t.chargedTokens++;
  }

  /** `t` ended at `nowMs` having generated `outputTokens`: whatever was not charged yet is. */
  ended(t: Ticket<unknown>, outputTokens: Tokens, nowMs: Ms | undefined): void {
    this.chargeKv(t, nowMs);
    this.vtc.chargeOutput(t.account ?? t.req.tenant, outputTokens - t.chargedTokens);
    t.chargedTokens = outputTokens;
  }

  /** The KV cache `t` has held since it was last charged (prompt and output so far). */
  private chargeKv(t: Ticket<unknown>, nowMs: Ms | undefined): void {
    if (this.vtc.cost.kvGibSecondWeight === 0 || nowMs === undefined) return;
    const since = t.kvChargedMs < 0 ? t.dispatchedMs : t.kvChargedMs;
    if (since < 0 || nowMs <= since) return;
    const gib = ((t.req.inputTokens + t.chargedTokens) * this.kvBytesPerToken) / 2 ** 30;
    this.vtc.chargeKv(t.account ?? t.req.tenant, (gib * (nowMs - since)) / 1000);
    t.kvChargedMs = nowMs;
  }
}
