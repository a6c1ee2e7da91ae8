/**
 * What each backend reports against the gateway's plan — the engine flags it was started with —
 * logged once each and again when it changes: the model name it serves (`--served-model-name`)
 * and its context (`--max-model-len`) from its `/v1/models`, the adapters it loads, the adapters
 * one batch runs (`--max-loras`) and its KV cache (`--kv-blocks`) from its `/metrics`.
 */
import type { FleetSpec } from '../core/fleet/fleet-spec.ts';
import type { Tokens } from '../core/request/units.ts';
import type { ModelListing } from './backend-metrics.ts';
import type { OpsLog } from './ops-log.ts';

/** What the gateway plans with: with no LoRA adapters, which ones a backend loads is not logged. */
export type PlannedSpec = Pick<
  FleetSpec,
  'model' | 'maxModelLen' | 'maxLoras' | 'adapters' | 'replicaKvTokens'
>;

export class PlanNotes {
  private readonly spec: PlannedSpec;
  private readonly log: OpsLog;
  private readonly names: readonly string[];
  /** What each backend was last logged to report, by subject and backend (one string each). */
  private readonly told = new Map<string, string>();
  /** The adapter list each backend's were read from: a list seen before is not compared again… */
  private readonly servableSeen: (readonly string[] | undefined)[];
  /** …and the listing. */
  private readonly listingSeen: (ModelListing | undefined)[];

  constructor(spec: PlannedSpec, log: OpsLog, names: readonly string[]) {
    this.spec = spec;
    this.log = log;
    this.names = names;
    this.servableSeen = names.map(() => undefined);
    this.listingSeen = names.map(() => undefined);
  }

  /**
   * A backend whose batches run another number of adapters than the gateway plans with: flow
   * control keeps each batch within the gateway's `max_loras`, so fewer (it holds requests a
   * backend could run) or more (they wait in the backend's queue, unpredicted) than it does.
   */
  maxLoras(index: number, reported: number): void {
    const planned = this.spec.maxLoras ?? 1;
    if (reported === planned || !this.isNews(index, 'max_loras', String(reported))) return;
    const name = this.names[index];
    this.log.warn(
      { backend: name, max_loras: reported, planned_max_loras: planned },
      `backend ${name} runs max_loras ${reported} but the gateway plans with ${planned}: pass --max-loras ${reported}`,
    );
  }

  /**
   * A backend whose `/v1/models` does not list the model the gateway asks it for refuses every
   * request (a 404 each client would take for its own fault), and one whose context differs
   * from the gateway's plan is admitted for wrongly: each is logged, once a listing.
   */
  listing(index: number, listed: ModelListing): void {
    // Asked on every admission: a listing seen before is not compared again. It is read again
    // every tenth scrape, and one that says the same is checked once.
    if (this.listingSeen[index] === listed) return;
    this.listingSeen[index] = listed;
    const key = `${listed.ids.join('\n')}\n${listed.maxModelLen ?? ''}`;
    if (!this.isNews(index, 'listing', key)) return;
    const { model, maxModelLen } = this.spec;
    const name = this.names[index];
    if (!listed.ids.includes(model)) {
      this.log.warn(
        { backend: name, model, listed: listed.ids },
        `backend ${name} does not list model "${model}" (it lists ${listed.ids.join(', ') || 'none'}): it will refuse every request; pass --served-model-name with the name it serves`,
      );
    }
    const len = listed.maxModelLen;
    if (len !== undefined && len !== maxModelLen) {
      this.log.warn(
        { backend: name, max_model_len: len, planned_max_model_len: maxModelLen },
        `backend ${name} serves max_model_len ${len} but the gateway plans with ${maxModelLen}: pass --max-model-len ${len}`,
      );
    }
  }

  /** The adapters a backend serves, logged when first known and whenever they change. */
  servable(index: number, servable: readonly string[]): void {
    if (this.servableSeen[index] === servable || (this.spec.adapters?.length ?? 0) === 0) return;
    this.servableSeen[index] = servable;
    const listed = servable.join(',');
    if (!this.isNews(index, 'adapters', listed)) return;
    const name = this.names[index];
    const what = servable.length === 0 ? 'no LoRA adapter' : `LoRA adapters ${servable.join(', ')}`;
    this.log.info({ backend: name, adapters: servable }, `backend ${name} serves ${what}`);
  }

  /**
   * A backend's KV cache of another size than the engine flags give: routing, admission and the
   * queue-wait model weigh that backend by its own (`ReplicaSnapshot.kvCapacityTokens`), but
   * the replicas the autoscaler plans and the prefix index's eviction go on from the flags.
   * Logged once a size; past a tenth off, as a warning naming the flag that would plan with it.
   */
  kvCapacity(index: number, tokens: Tokens): void {
    const planned = this.spec.replicaKvTokens;
    if (tokens === planned || !this.isNews(index, 'kv', String(tokens))) return;
    const name = this.names[index];
    const far = Math.abs(tokens - planned) > planned / 10;
    const fields = { backend: name, kv_capacity_tokens: tokens, planned_kv_tokens: planned };
    this.log[far ? 'warn' : 'info'](
      fields,
      `backend ${name} holds ${tokens} KV tokens where the engine flags plan ${planned}: it is routed and admitted by its own` +
        (far ? '; pass its num_gpu_blocks as --kv-blocks to plan the fleet with it' : ''),
    );
  }

  /** Whether `key` is news of backend `index` on `subject`; it is then remembered as told. */
  private isNews(index: number, subject: string, key: string): boolean {
    const at = `${subject}:${index}`;
    if (this.told.get(at) === key) return false;
    this.told.set(at, key);
    return true;
  }
}
