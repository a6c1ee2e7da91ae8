/**
 * One simulated run: a workload arrives on a virtual clock, the policy pipeline decides each
 * request, a fleet of engine replicas serves them, clients time out and retry, and every
 * outcome folds into the report. Deterministic: same seed and inputs, same report (apart from
 * its `sim` block of wall-clock figures).
 */
import type { LlmRequest } from '../core/request/request.ts';
import type { Ms } from '../core/request/units.ts';
import type { Rng } from '../core/ports/rng.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { ResolvedPolicy } from '../core/config/policy.ts';
import type { FinalState } from '../core/observe/request-outcome.ts';
import { Pipeline } from '../core/pipeline.ts';
import { OutcomeAccumulator } from '../core/observe/outcome-accumulator.ts';
import { RunLengthSamples } from '../core/observe/run-length-samples.ts';
import { buildReport, type Report } from '../core/observe/report.ts';
import type { EngineConfig, EngineListener } from '../engine/engine-types.ts';
import type { TimingProfile } from '../engine/timing/profile.ts';
import { VirtualClock } from '../runtime/virtual-clock.ts';
import { Fleet } from './fleet.ts';
import { RequestTracker } from './request-tracker.ts';
import { retryDelayMs, type ClientBehaviour } from './client-behaviour.ts';

export interface SimulationOptions {
  readonly seed: number;
  readonly rng: Rng;
  readonly policy: ResolvedPolicy;
  readonly requests: Iterable<LlmRequest>;
  readonly replicas: number;
  readonly engine: EngineConfig;
  readonly profile: TimingProfile;
  readonly client: ClientBehaviour;
  readonly scenario: Record<string, unknown>;
  /** Wall clock for the report's `sim` block only; never used by the model. */
  readonly wallClock: Clock;
  /** Called every few thousand events with simulated time and requests finished. */
  readonly onProgress?: (simMs: Ms, finished: number) => void;
}

export function simulate(opts: SimulationOptions): Report {
  const wallStart = opts.wallClock.now();
  const clock = new VirtualClock();
  const pipeline = new Pipeline(opts.policy);
  const accumulator = new OutcomeAccumulator(opts.policy.classes);
  const itl = new RunLengthSamples();
  const excludedGaps: number[] = [];
  const clientRng = opts.rng.fork('client');
  const counters = { timeouts: 0, retries: 0, finished: 0 };

  const finish = (tracker: RequestTracker, state: FinalState) => {
    if (state !== 'completed' && tracker.gaps !== null)
      for (const g of tracker.gaps) excludedGaps.push(g);
    accumulator.add(tracker.outcome(state));
    counters.finished++;
  };

  const endAttempt = (t: RequestTracker) => {
    t.timeout?.cancel();
    t.timeout = null;
    fleet.release(t.replica);
  };

  const listener: EngineListener<RequestTracker> = {
    onPrefillStart(t, atMs) {
      if (t.prefillStartMs === undefined) t.prefillStartMs = atMs;
    },
    onFirstToken(t, atMs, stepStartMs, cachedTokens) {
      t.firstTokenMs = atMs;
      t.firstStepStartMs = stepStartMs;
      t.lastTokenMs = atMs;
      t.cachedTokens += cachedTokens;
      t.streamed = 1;
    },
    onToken(t, atMs) {
      itl.add(t.recordToken(atMs));
    },
    onFinish(t) {
      endAttempt(t);
      finish(t, 'completed');
    },
    onPreempt(t) {
      t.preemptions++;
    },
    onFail(t, _atMs, reason) {
      endAttempt(t);
      t.failReason = reason;
      finish(t, 'failed');
    },
  };

  const fleet = new Fleet(opts.replicas, opts.engine, opts.profile, listener, clock);

  const retryOrEnd = (tracker: RequestTracker, state: FinalState, retryAfterMs?: Ms) => {
    if (tracker.attempts >= opts.client.maxAttempts) return finish(tracker, state);
    counters.retries++;
    const delay = retryDelayMs(opts.client, tracker.attempts, clientRng, retryAfterMs);
    clock.at(clock.now() + delay, () => sendAttempt(tracker));
  };

  const onTimeout = (tracker: RequestTracker) => {
    tracker.timeout = null;
    counters.timeouts++;
    fleet.cancel(tracker);
    // A stream that already produced tokens is never retried: the client would see them twice.
    if (tracker.firstTokenMs !== undefined) return finish(tracker, 'cancelled');
    retryOrEnd(tracker, 'cancelled');
  };

  const sendAttempt = (tracker: RequestTracker) => {
    tracker.nextAttempt();
    const now = clock.now();
    const decision = pipeline.decide(tracker.req, fleet.snapshots(), now);
    if (decision.outcome === 'reject') {
      tracker.admitted = false;
      tracker.rejectReason = decision.reason;
      return retryOrEnd(tracker, 'rejected', decision.retryAfterMs);
    }
    tracker.admitted = true;
    tracker.rejectReason = undefined;
    tracker.replica = decision.replica;
    if (opts.client.timeoutMs !== undefined) {
      tracker.timeout = clock.at(now + opts.client.timeoutMs, () => onTimeout(tracker));
    }
    fleet.dispatch(tracker);
  };

  const arrivals = opts.requests[Symbol.iterator]();
  const scheduleNextArrival = () => {
    const next = arrivals.next();
    if (next.done) return;
    const req = next.value;
    clock.at(req.arrivalMs, () => {
      sendAttempt(new RequestTracker(req, opts.client.timeoutMs !== undefined));
      scheduleNextArrival();
    });
  };
  scheduleNextArrival();

  let sinceProgress = 0;
  clock.run(
    Infinity,
    opts.onProgress === undefined
      ? undefined
      : (now) => {
          if (++sinceProgress === 4096) {
            sinceProgress = 0;
            opts.onProgress?.(now, counters.finished);
          }
        },
  );

  const durationMs = clock.now();
  const engine = fleet.stats();
  return buildReport(accumulator, {
    seed: opts.seed,
    policy: opts.policy.name,
    policyRevision: opts.policy.revision,
    scenario: opts.scenario,
    durationMs,
    classes: opts.policy.classes,
    itl: itl.summarize(excludedGaps),
    fleet: {
      replicas: opts.replicas,
      gpusPerReplica: opts.engine.tp,
      readyReplicaMs: opts.replicas * durationMs,
      kvCapacityTokens: fleet.kvCapacityTokens,
    },
    engine: { ...engine, kvUsedBlocksAtEnd: fleet.kvUsedBlocks() },
    meanInSystem: fleet.meanInSystem(durationMs),
    client: { timeouts: counters.timeouts, retries: counters.retries },
    admission: { deferred: 0, degraded: 0 },
    sim: { wallMs: opts.wallClock.now() - wallStart, events: clock.events },
  });
}
