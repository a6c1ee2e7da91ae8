/**
 * What the host reports of the streams it runs, into the control plane's ledger
 * (`../fleet/replica-ledger.ts`) and, under flow control, into each replica's measured pace
 * (`../routing/step-pace.ts`). Its rule: the pace hears of every change to a replica's batch
 * before the ledger makes it, since a step keeps the batch it began with.
 */
import type { DispatchConfig } from '../config/stage-schema.ts';
import type { Ms } from '../request/units.ts';
import type { LedgerEntry, ReplicaLedger } from '../fleet/replica-ledger.ts';
import { StepPace } from '../routing/step-pace.ts';
import type { FlowControl } from '../routing/flow-control.ts';

export class LedgerFeed {
  readonly ledger: ReplicaLedger;
  /** Null where the pace is not measured (the baselines, `dispatch.params.pace: false`). */
  private readonly pace: StepPace | null;
  /** Null where no step is planned against a gap objective (dispatch `immediate`). */
  private readonly flow: FlowControl | null;

  /** `flow`: the strategy's flow control, which `config` may not dispatch under. */
  constructor(ledger: ReplicaLedger, config: DispatchConfig, flow: FlowControl) {
    this.ledger = ledger;
    const under = config.type === 'flow-control';
    this.flow = under ? flow : null;
    this.pace = under && config.pace !== null ? new StepPace(flow, config.pace) : null;
  }

  /** `e` was dispatched at `nowMs`: it joins its replica's batch. */
  placed(e: LedgerEntry, nowMs: Ms): void {
    this.pace?.changing(this.ledger.replicas[e.replica], nowMs);
    this.ledger.add(e);
  }

  /** `e`'s first token streamed at `nowMs`: it decodes from now on. */
  started(e: LedgerEntry, nowMs: Ms): void {
    this.pace?.started(this.ledger.replicas[e.replica], nowMs);
    this.ledger.firstToken(e, nowMs);
  }

  /** Another token of `e` streamed at `nowMs`: counted, and a sample of its replica's pace when due. */
  streamed(e: LedgerEntry, nowMs: Ms): void {
    this.ledger.token(e);
    this.pace?.streamed(this.ledger.replicas[e.replica], e, nowMs);
  }

  /**
   * `e`'s client got a gap of `gapMs` at `nowMs` (the gateway times it at the write, the
   * simulator at the token): flow control's step share hears of a late one.
   */
  delivered(e: LedgerEntry, gapMs: Ms, nowMs: Ms): void {
    this.flow?.delivered(e, gapMs, nowMs);
  }

  /** `e` ended (at `nowMs`, when known): it leaves its replica's batch. */
  ended(e: LedgerEntry, nowMs: Ms | undefined): void {
    if (nowMs !== undefined) this.pace?.changing(this.ledger.replicas[e.replica], nowMs);
    this.ledger.remove(e);
  }

  /** Replica `index` was removed: whatever takes its index next starts from the profile. */
  replicaGone(index: number): void {
    const a = this.ledger.replicas[index];
    if (a !== undefined) StepPace.forget(a);
  }
}
