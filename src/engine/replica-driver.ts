/**
 * Runs a replica core by itself on injected time: when work arrives at an idle replica it
 * starts a step and sets a timer for its end; at the end it applies the step and starts the
 * next. The same driver serves the virtual-clock simulator and a wall-clock server — only the
 * `Clock` and `Timers` differ. Main rule: at most one step in flight, and a listener reacting
 * to an event (adding or cancelling) never starts a step from inside another. An idle replica
 * starts its step on a timer due now, not inside `add`, so requests that arrive at the same
 * instant share the step, as they share the engine loop's next iteration in vLLM.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import type { EngineConfig, EngineListener, EngineRequest, ReplicaLoad } from './engine-types.ts';
import type { EngineStats } from './engine-stats.ts';
import { ReplicaCore } from './replica.ts';
import type { TimingProfile } from './timing/profile.ts';

export interface ReplicaDriverOptions<R extends EngineRequest> {
  readonly config: EngineConfig;
  readonly profile: TimingProfile;
  readonly listener: EngineListener<R>;
  readonly clock: Clock;
  readonly timers: Timers;
}

export class ReplicaDriver<R extends EngineRequest> {
  readonly core: ReplicaCore<R>;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private timer: TimerHandle | null = null;
  private wake: TimerHandle | null = null;
  private closed = false;

  constructor(opts: ReplicaDriverOptions<R>) {
    this.core = new ReplicaCore<R>(opts.config, opts.profile, opts.listener);
    this.clock = opts.clock;
    this.timers = opts.timers;
  }

  /** Queues `req` now; false if the engine failed it at once (its onFail has fired). */
  add(req: R): boolean {
    const ok = this.core.add(req, this.clock.now());
    if (!this.core.stepping && this.wake === null && !this.closed) {
      this.wake = this.timers.at(this.clock.now(), this.onWake);
    }
    return ok;
  }

  cancel(id: string): boolean {
    return this.core.cancel(id, this.clock.now());
  }

  load(): ReplicaLoad {
    return this.core.load();
  }

  stats(): EngineStats {
    return this.core.stats();
  }

  get idle(): boolean {
    return this.core.idle;
  }

  /** Stops scheduling steps; the step in flight, if any, is never applied. */
  close(): void {
    this.closed = true;
    this.timer?.cancel();
    this.timer = null;
    this.wake?.cancel();
    this.wake = null;
  }

  private kick(): void {
    if (this.closed || this.core.stepping) return;
    const now = this.clock.now();
    const durationMs = this.core.startStep(now);
    if (durationMs === null) return;
    this.timer = this.timers.at(now + durationMs, this.onStepEnd);
  }

  private readonly onWake = (): void => {
    this.wake = null;
    this.kick();
  };

  private readonly onStepEnd = (): void => {
    this.timer = null;
    this.core.finishStep(this.clock.now());
    for (const p of this.core.takePauses()) {
      this.timers.at(p.atMs, () => {
        if (this.closed || !this.core.resume(p.id, this.clock.now())) return;
        if (!this.core.stepping && this.wake === null) {
          this.wake = this.timers.at(this.clock.now(), this.onWake);
        }
      });
    }
    this.kick();
  };
}
