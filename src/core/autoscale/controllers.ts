/**
 * Every autoscaler, registered once by name. `goodput` is the SLO controller; the baselines
 * model what operators run today: an HPA on GPU utilisation, KEDA on the engines' waiting
 * queue, and Knative's KPA (a stable and a panic window over concurrency).
 */
import { fewerGroupsHold } from './fewer-groups.ts';
import type { Ms } from '../request/units.ts';
import {
  clampDesired,
  type Autoscaler,
  type ScaleDecision,
  type ScaleLimits,
  type ScaleReason,
  type ScaleSignals,
} from './autoscaler.ts';

/** Recommendations over a window, for a scale-in that only goes as low as the window's highest. */
interface Window {
  readonly at: Ms[];
  readonly value: number[];
}

function remember(w: Window, nowMs: Ms, value: number, spanMs: Ms): number {
  w.at.push(nowMs);
  w.value.push(value);
  while (w.at.length > 0 && w.at[0] < nowMs - spanMs) {
    w.at.shift();
    w.value.shift();
  }
  return Math.max(...w.value);
}

/**
 * The window's rule, as Kubernetes' HPA applies it to scale-in: go up at once (at most `upStep`
 * groups a decision), go down only to the highest recommendation of the scale-in window
 * (`scaleInWindowMs`), and one group at a time. `wantedIn`, at least `wanted`, is the recommendation scale-in heeds: a
 * threshold of its own, so that a load near a boundary does not go down and up again.
 */
function stabilized(
  w: Window,
  s: ScaleSignals,
  wanted: number,
  reason: ScaleReason,
  limits: ScaleLimits,
  upStep: number,
  wantedIn = wanted,
): ScaleDecision {
  const current = s.ready + s.starting;
  const floor = remember(w, s.nowMs, wantedIn, limits.scaleInWindowMs);
  if (wanted > current) {
    return { desired: clampDesired(Math.min(wanted, current + upStep), limits), reason };
  }
  if (!s.fresh) return { desired: clampDesired(current, limits), reason: 'stale' };
  if (floor >= current) {
    return {
      desired: clampDesired(current, limits),
      reason: floor > wanted ? 'stabilizing' : reason,
    };
  }
  // At the floor already, nothing is scaled in: said so, not counted as a scale-in.
  const desired = clampDesired(current - 1, limits);
  return { desired, reason: desired < current ? 'scale_in' : 'floor' };
}

const newWindow = (): Window => ({ at: [], value: [] });

/** No autoscaling: the fleet stays at its minimum. */
const none: Autoscaler<null> = {
  type: 'none',
  description: 'a fixed fleet of --min-replicas groups',
  initState: () => null,
  decide: (_s, _signals, limits) => ({ desired: limits.minReplicas, reason: 'floor' }),
};

/** Drain target for a queue, Holt's smoothing (per 5 s tick), the capacity correction's. */
const DRAIN_TARGET_MS = 30_000;
const LEVEL_ALPHA = 0.3;
const TREND_BETA = 0.05;
const LEARN_RATE = 0.1;
/** Misses beyond this share of arrivals mark a fleet at its capacity at SLO. */
const MISSED_SHARE = 0.02;
/** The least the correction learns: a fleet refusing while serving almost nothing is not at capacity. */
const CORRECTION_MIN = 0.25;
/** Scale-in's threshold: the headroom it keeps beyond scale-out's. */
const SCALE_IN_BAND = 1.2;

interface GoodputState {
  level: number;
  trend: number;
  started: boolean;
  /**
   * What the groups served within SLO while backlogged, over what the step-time model said they
   * could (EWMA); 1 until a backlog has shown it. It carries from one mix to the next.
   */
  correction: number;
  learned: boolean;
  readonly window: Window;
}

/**
 * Goodput's controller: R = ceil((h · λ_f + Q / T_d) / C) groups, where λ_f is the arrival rate
 * forecast one ready time ahead (Holt's level and trend; a falling trend sheds nothing early),
 * Q the requests waiting, T_d the time to drain them, h the headroom a burst is served from
 * while new groups start, and C one group's capacity at SLO for the current mix: the step-time
 * model's, corrected by what groups were seen to serve within SLO while backlogged — an
 * envelope learned online, never a peak benchmark. One group is held in reserve beyond two.
 * Scale-in waits out the scale-in window, one group at a time, on a threshold of its own (the
 * load must fit with a fifth more headroom), never on stale figures, and never when the streams
 * in flight would not fit the groups left or a fluid simulation of the forecast load on them
 * over the window falls behind (the N−1 check, fewer-groups.ts).
 */
const goodput: Autoscaler<GoodputState> = {
  type: 'goodput',
  description:
    'forecast arrivals one ready time ahead with headroom and the queue to drain, over a group capacity at SLO corrected online',
  readsCapacity: true,
  initState: () => ({
    level: 0,
    trend: 0,
    started: false,
    correction: 1,
    learned: false,
    window: newWindow(),
  }),
  decide(st, s, limits) {
    if (!st.started) {
      // Holt's start: the first figure is the level, with no trend yet.
      st.started = true;
      st.level = s.arrivalRps;
    } else {
      const prev = st.level;
      st.level = LEVEL_ALPHA * s.arrivalRps + (1 - LEVEL_ALPHA) * (st.level + st.trend);
      st.trend = TREND_BETA * (st.level - prev) + (1 - TREND_BETA) * st.trend;
    }
    const current = s.ready + s.starting;
    const model = s.model;
    // Overloaded: work waits beyond a couple of requests a group while the fleet falls behind
    // its arrivals, or more than a few in a hundred miss their SLO (refused or late) — what it
    // serves within SLO then is what it can, at this load and its burstiness. The model sees a
    // smooth load; a trace's bursts of seconds refuse requests at an average rate far below it,
    // and more groups are what absorbs them.
    const behind = s.queued + s.engineWaiting > 2 * s.ready && s.goodRps < 0.95 * s.arrivalRps;
    const missing = s.missedRps > MISSED_SHARE * s.arrivalRps;
    const overloaded = s.ready > 0 && (behind || missing);
    if (model === undefined || model.rps <= 0) {
      // Nothing has completed yet to size a group by (a cold start under long replies): a fleet
      // overloaded all the same gets a group more a tick until the model can say how many.
      const wanted = overloaded ? current + 1 : current;
      return stabilized(st.window, s, wanted, overloaded ? 'queue' : 'hold', limits, 4);
    }
    if (overloaded) {
      const seen = Math.max(CORRECTION_MIN, s.goodRps / s.ready / model.rps);
      st.correction = st.learned ? st.correction + LEARN_RATE * (seen - st.correction) : seen;
      st.learned = true;
    }
    const c = model.rps * st.correction;
    const horizon = limits.readyTimeMs / limits.tickMs;
    const forecast = Math.max(st.level, st.level + st.trend * horizon);
    const queued = s.queued + s.engineWaiting;
    const byArrivals = (limits.headroom * forecast) / c;
    const byQueue = (queued * 1000) / DRAIN_TARGET_MS / c;
    const reserve = (n: number) => (n >= 2 ? n + 1 : n);
    const wanted = reserve(Math.ceil(byArrivals + byQueue));
    // Scale-in waits until the load would fit with a fifth more headroom.
    const wantedIn = reserve(Math.ceil(SCALE_IN_BAND * byArrivals + byQueue));
    const reason: ScaleReason =
      wanted <= limits.minReplicas
        ? 'floor'
        : wanted >= limits.maxReplicas
          ? 'ceiling'
          : byQueue > byArrivals
            ? 'queue'
            : 'arrivals';
    const upStep = Math.max(2, current);
    const d = stabilized(st.window, s, wanted, reason, limits, upStep, wantedIn);
    // N−1: a ready group is drained only if the streams in flight fit on those left, and a
    // fluid simulation of the forecast load on them over the scale-in window keeps up.
    const losesReady = d.desired < current && s.starting === 0;
    if (!losesReady) return d;
    const left = s.ready - 1;
    const fits = s.running + queued <= left * model.streams * st.correction;
    const holds = fewerGroupsHold({
      groups: left,
      capacityRps: c,
      streamsPerGroup: model.streams * st.correction,
      levelRps: st.level,
      trendRpsPerS: Math.max(0, st.trend) / (limits.tickMs / 1000),
      queued,
      running: s.running,
      horizonMs: limits.scaleInWindowMs,
      drainMs: DRAIN_TARGET_MS,
    });
    return fits && holds ? d : { desired: clampDesired(current, limits), reason: 'n_minus_1' };
  },
};

/** Kubernetes' HPA on GPU utilisation: target 70%, the metric 15 s late, decisions every 15 s. */
interface HpaState {
  readonly seen: { at: Ms; value: number }[];
  lastMs: Ms;
  last: ScaleDecision | null;
  readonly window: Window;
}
const hpaUtilization: Autoscaler<HpaState> = {
  type: 'hpa-utilization',
  description:
    "Kubernetes' HPA on GPU utilisation: 70% target, the metric 15 s late, 10% tolerance",
  initState: () => ({ seen: [], lastMs: -Infinity, last: null, window: newWindow() }),
  decide(st, s, limits) {
    st.seen.push({ at: s.nowMs, value: s.utilization });
    while (st.seen.length > 1 && st.seen[1].at <= s.nowMs - 15_000) st.seen.shift();
    if (st.last !== null && s.nowMs - st.lastMs < 15_000) return st.last;
    const u = st.seen[0].value;
    const ratio = u / 0.7;
    const wanted = Math.abs(ratio - 1) <= 0.1 ? s.ready : Math.ceil(s.ready * ratio);
    const upStep = Math.max(4, s.ready);
    st.last = stabilized(st.window, s, wanted, 'utilization', limits, upStep);
    st.lastMs = s.nowMs;
    return st.last;
  },
};

/** KEDA on vLLM's num_requests_waiting: 5 per replica, polled every 30 s, through an HPA. */
interface KedaState {
  lastMs: Ms;
  last: ScaleDecision | null;
  readonly window: Window;
}
const kedaQueue: Autoscaler<KedaState> = {
  type: 'keda-queue',
  description: "KEDA on the engines' waiting requests: 5 per replica, polled every 30 s",
  initState: () => ({ lastMs: -Infinity, last: null, window: newWindow() }),
  decide(st, s, limits) {
    if (st.last !== null && s.nowMs - st.lastMs < 30_000) return st.last;
    const wanted = Math.max(1, Math.ceil((s.engineWaiting + s.queued) / 5));
    const upStep = Math.max(4, s.ready);
    st.last = stabilized(st.window, s, wanted, 'waiting', limits, upStep);
    st.lastMs = s.nowMs;
    return st.last;
  },
};

/**
 * Knative's KPA (as AIBrix's KPA ports it): concurrency averaged over a 60 s stable window and
 * a 6 s panic window against a target per replica; when the panic window wants twice what is
 * ready, it scales to that at once and does not scale in for the stable window.
 */
interface KpaState {
  readonly seen: { at: Ms; value: number }[];
  panicUntilMs: Ms;
}
const KPA_TARGET = 64;
const kpaLike: Autoscaler<KpaState> = {
  type: 'kpa-like',
  description:
    "Knative's KPA: concurrency over a 60 s stable and a 6 s panic window, 64 per replica",
  initState: () => ({ seen: [], panicUntilMs: -Infinity }),
  decide(st, s, limits) {
    const concurrency = s.running + s.engineWaiting + s.queued;
    st.seen.push({ at: s.nowMs, value: concurrency });
    while (st.seen.length > 0 && st.seen[0].at < s.nowMs - 60_000) st.seen.shift();
    const avg = (from: Ms) => {
      const xs = st.seen.filter((x) => x.at >= from);
      return xs.reduce((a, x) => a + x.value, 0) / Math.max(1, xs.length);
    };
    const stable = Math.ceil(avg(s.nowMs - 60_000) / KPA_TARGET);
    const panic = Math.ceil(avg(s.nowMs - 6_000) / KPA_TARGET);
    const current = s.ready + s.starting;
    if (panic >= 2 * Math.max(1, s.ready)) st.panicUntilMs = s.nowMs + 60_000;
    if (s.nowMs < st.panicUntilMs) {
      return { desired: clampDesired(Math.max(current, panic), limits), reason: 'panic' };
    }
    if (!s.fresh && stable < current)
      return { desired: clampDesired(current, limits), reason: 'stale' };
    return { desired: clampDesired(stable, limits), reason: 'concurrency' };
  },
};

export const AUTOSCALERS: Readonly<Record<string, Autoscaler>> = Object.fromEntries(
  [none, goodput, hpaUtilization, kedaQueue, kpaLike].map((a) => [a.type, a as Autoscaler]),
);
