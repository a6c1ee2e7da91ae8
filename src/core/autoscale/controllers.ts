/**
 * Every autoscaler, registered once by name. `goodput` is the SLO controller; the baselines
 * model what operators run today: an HPA on GPU utilisation, KEDA on the engines' waiting
 * queue, and Knative's KPA (a stable and a panic window over concurrency).
 */
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
 * groups a decision), go down only to the highest recommendation of the last `stableMs`, and one
 * group at a time.
 */
function stabilized(
  w: Window,
  s: ScaleSignals,
  wanted: number,
  reason: ScaleReason,
  limits: ScaleLimits,
  stableMs: Ms,
  upStep: number,
): ScaleDecision {
  const current = s.ready + s.starting;
  const floor = remember(w, s.nowMs, wanted, stableMs);
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
  return { desired: clampDesired(current - 1, limits), reason: 'scale_in' };
}

const newWindow = (): Window => ({ at: [], value: [] });

/** No autoscaling: the fleet stays at its minimum. */
const none: Autoscaler<null> = {
  type: 'none',
  description: 'a fixed fleet of --min-replicas groups',
  initState: () => null,
  decide: (_s, _signals, limits) => ({ desired: limits.minReplicas, reason: 'floor' }),
};

/** Safety factor on forecast arrivals, drain target for a queue, Holt's smoothing. */
const SAFETY = 1.5;
const DRAIN_TARGET_MS = 30_000;
const LEVEL_ALPHA = 0.5;
const TREND_BETA = 0.2;
const STABLE_MS = 300_000;

interface GoodputState {
  level: number;
  trend: number;
  /** Good requests per second one ready group served while backlogged (EWMA); 0: not yet seen. */
  capacity: number;
  /** The most one ready group served when not backlogged: a floor on its capacity. */
  floor: number;
  started: boolean;
  readonly window: Window;
}

/**
 * Goodput's controller: R = ceil((s · λ_f + Q / T_d) / C) groups, where λ_f is the arrival rate
 * forecast one ready time ahead (Holt's level and trend), Q the requests waiting, T_d the time
 * to drain them, s a safety factor and C one group's capacity at SLO for the current mix —
 * learned from the good throughput groups sustained while backlogged, never a peak benchmark;
 * until a backlog has shown it, the step-time model's prediction for the recent mix.
 * Scale-out looks ahead by the ready time, so it starts before the queue builds; scale-in waits
 * out a 5-minute window, one group at a time, never on stale figures; one group is held in
 * reserve beyond two.
 */
const goodput: Autoscaler<GoodputState> = {
  type: 'goodput',
  description:
    'forecast arrivals one ready time ahead and the queue to drain, over a group capacity at SLO learned online',
  initState: () => ({
    level: 0,
    trend: 0,
    capacity: 0,
    floor: 0,
    started: false,
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
    if (s.ready > 0) {
      const perGroup = s.goodRps / s.ready;
      // Saturated: work waits beyond a couple of requests a group and the fleet is not keeping
      // up with arrivals — what it serves within SLO then is what it can.
      const saturated = s.queued + s.engineWaiting > 2 * s.ready && s.goodRps < 0.95 * s.arrivalRps;
      if (saturated) {
        st.capacity = st.capacity === 0 ? perGroup : st.capacity + 0.2 * (perGroup - st.capacity);
      } else st.floor = Math.max(st.floor, perGroup);
    }
    const c = st.capacity > 0 ? st.capacity : (s.modelCapacityRps ?? st.floor);
    const current = s.ready + s.starting;
    if (c <= 0) return stabilized(st.window, s, current, 'hold', limits, STABLE_MS, 4);
    const horizon = limits.readyTimeMs / limits.tickMs;
    const forecast = Math.max(s.arrivalRps, st.level + st.trend * horizon);
    const queued = s.queued + s.engineWaiting;
    const byArrivals = (SAFETY * forecast) / c;
    const byQueue = (queued * 1000) / DRAIN_TARGET_MS / c;
    let wanted = Math.ceil(byArrivals + byQueue);
    if (wanted >= 2) wanted += 1;
    const reason: ScaleReason =
      wanted <= limits.minReplicas
        ? 'floor'
        : wanted >= limits.maxReplicas
          ? 'ceiling'
          : byQueue > byArrivals
            ? 'queue'
            : 'arrivals';
    return stabilized(st.window, s, wanted, reason, limits, STABLE_MS, Math.max(2, current));
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
    st.last = stabilized(st.window, s, wanted, 'utilization', limits, STABLE_MS, upStep);
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
    st.last = stabilized(st.window, s, wanted, 'waiting', limits, STABLE_MS, upStep);
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
