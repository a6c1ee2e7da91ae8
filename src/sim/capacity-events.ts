/**
 * Capacity events a run injects, apart from what the autoscaler does: a group failure (the
 * busiest ready group is lost at once; each request it held moves through admission to another
 * replica — one not yet streaming as it was, one under way as its rest, prompt and streamed
 * tokens recomputed there — but several choices under way end failed), a prefix-cache cold
 * reset (every ready replica drops the prefixes no request holds), and a rollout's canary (one
 * group's GPUs held outside the pool for a window: they count in GPU-seconds; the autoscaler's
 * ceiling is lowered by `autoscaling.ts`). Each is reported only when the run has it, so a run
 * without them reports as before. A failure or reset due after the workload has ended never
 * happens (`stop`): the run ends with its requests, not at the event.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import type { Ms } from '../core/request/units.ts';
import type { Fleet } from './fleet.ts';
import type { RequestTracker } from './request-tracker.ts';

export interface CapacityEventOptions {
  /** Times at which the busiest ready group fails. */
  readonly failGroupsAtMs?: readonly Ms[];
  /** Times at which every ready replica's prefix cache goes cold. */
  readonly prefixResetsAtMs?: readonly Ms[];
  /** Windows in which a canary holds one group's GPUs outside the pool. */
  readonly canariesMs?: readonly { readonly fromMs: Ms; readonly toMs: Ms }[];
}

/** What a failure does to a request it held, in the simulation's own terms. */
export interface FailureHost {
  /** End the attempt the failed group held (with what it had streamed). */
  endAttempt(t: RequestTracker): void;
  /** Offer it again: through admission, to another replica; false when that refused it. */
  resend(t: RequestTracker): boolean;
  /** End it failed: its streams were under way and cannot go on elsewhere. */
  lost(t: RequestTracker): void;
  pump(): void;
}

export class CapacityEvents {
  private readonly opts: CapacityEventOptions;
  private readonly resets = { resets: 0, dropped_blocks: 0 };
  private readonly failures = { failovers: 0, resumed: 0, lost: 0, recomputedTokens: 0 };
  private readonly pending: TimerHandle[] = [];

  constructor(opts: CapacityEventOptions, fleet: Fleet, clock: Clock & Timers, host: FailureHost) {
    this.opts = opts;
    for (const at of opts.prefixResetsAtMs ?? []) {
      this.pending.push(
        clock.at(at, () => {
          this.resets.resets++;
          this.resets.dropped_blocks += fleet.flushPrefixCaches();
        }),
      );
    }
    for (const at of opts.failGroupsAtMs ?? []) {
      this.pending.push(
        clock.at(at, () => {
          const index = fleet.busiestReady();
          if (index < 0) return;
          for (const t of fleet.fail(index)) {
            host.endAttempt(t);
            // Counted as moved only where admission took it: one refused there is its client's
            // refusal (a request not yet streaming) or a stream lost.
            if (t.firstTokenMs === undefined) {
              if (host.resend(t)) this.failures.failovers++;
            } else if (t.resume()) {
              // A stream under way resumes elsewhere: the rest is asked for as a new request
              // whose prompt is the original and the tokens streamed so far (recomputed there).
              const recomputed = t.req.inputTokens + t.streamed;
              if (host.resend(t)) {
                this.failures.resumed++;
                this.failures.recomputedTokens += recomputed;
              } else this.failures.lost++;
            } else {
              // Several choices under way stopped at different tokens: no one rest to ask for.
              this.failures.lost++;
              host.lost(t);
            }
          }
          host.pump();
        }),
      );
    }
  }

  /** The workload has ended: failures and resets still due never happen. */
  stop(): void {
    for (const h of this.pending) h.cancel();
    this.pending.length = 0;
  }

  /** Replica time the canaries held GPUs within a run of `durationMs`. */
  canaryMs(durationMs: Ms): Ms {
    let ms = 0;
    for (const w of this.opts.canariesMs ?? [])
      ms += Math.max(0, Math.min(w.toMs, durationMs) - Math.min(w.fromMs, durationMs));
    return ms;
  }

  /** The fleet report's entries for the events the run had. */
  report(durationMs: Ms, failedGroups: number) {
    const o = this.opts;
    return {
      ...(o.canariesMs === undefined
        ? {}
        : { canary: { windows: o.canariesMs.length, held_s: this.canaryMs(durationMs) / 1000 } }),
      ...(o.prefixResetsAtMs === undefined ? {} : { prefixResets: this.resets }),
      ...(o.failGroupsAtMs === undefined
        ? {}
        : {
            failures: {
              groups: failedGroups,
              failovers: this.failures.failovers,
              streams_resumed: this.failures.resumed,
              recomputed_tokens: this.failures.recomputedTokens,
              ...(this.failures.lost > 0 ? { streams_lost: this.failures.lost } : {}),
            },
          }),
    };
  }
}
