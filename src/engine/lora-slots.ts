/**
 * LoRA adapters on a replica, as vLLM serves them: `max_loras` GPU slots, the least recently
 * used adapter that the batch is not using evicted for a new one; and a step's batch holds at
 * most `max_loras` distinct adapters, so a waiting request whose adapter would be one too many
 * stays waiting that step (vLLM's scheduler skips it and admits the next). Bringing an adapter
 * into a slot costs `loadMs` (Goodput's model: vLLM has no such option — it is the weights'
 * transfer and setup), added to the step that first runs it. Requests without an adapter run
 * on the base model and take no slot.
 */
import type { Ms } from '../core/request/units.ts';

export class LoraSlots {
  readonly maxLoras: number;
  readonly loadMs: Ms;
  /** GPU-resident adapters, least recently used first. */
  private readonly resident: string[] = [];
  /** Distinct adapters in the step being planned, with how many of its sequences use each. */
  private readonly batch = new Map<string, number>();
  /** Adapters loaded for the step being planned. */
  loads = 0;
  /** Adapters loaded over the replica's life. */
  totalLoads = 0;

  constructor(maxLoras: number, loadMs: Ms) {
    this.maxLoras = maxLoras;
    this.loadMs = loadMs;
  }

  /** Admission for the step being planned; `running`: the adapters of the sequences it runs already. */
  beginStep(running: Iterable<string | undefined>): void {
    this.batch.clear();
    for (const a of running) if (a !== undefined) this.batch.set(a, (this.batch.get(a) ?? 0) + 1);
  }

  /** Whether a sequence of `adapter` may join the step's batch. */
  admits(adapter: string | undefined): boolean {
    return adapter === undefined || this.batch.has(adapter) || this.batch.size < this.maxLoras;
  }

  /** A sequence of `adapter` joins the step's batch: its adapter is loaded if not resident. */
  take(adapter: string | undefined): void {
    if (adapter === undefined) return;
    this.batch.set(adapter, (this.batch.get(adapter) ?? 0) + 1);
    const at = this.resident.indexOf(adapter);
    if (at >= 0) {
      this.resident.splice(at, 1);
      this.resident.push(adapter);
      return;
    }
    if (this.resident.length >= this.maxLoras) {
      const victim = this.resident.findIndex((a) => !this.batch.has(a));
      if (victim >= 0) this.resident.splice(victim, 1);
    }
    this.resident.push(adapter);
    this.loads++;
    this.totalLoads++;
  }

  /** GPU-resident adapters, least recently used first (vLLM's running LoRA adapters). */
  get residentAdapters(): readonly string[] {
    return this.resident;
  }

  /** Adapters of the step just planned (their distinct names). */
  get batchAdapters(): IterableIterator<string> {
    return this.batch.keys();
  }
}
