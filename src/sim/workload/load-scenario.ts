/**
 * `--scenario diurnal-burst`: a workload's arrivals re-timed to a day's shape and a burst, for
 * autoscaling — built on any trace or generator, its requests and their order unchanged. The
 * rate becomes the workload's own times m(t), t its own time: a diurnal ramp from half the rate
 * at the start up to 1.5× mid-way and back, m = 1 + ½ sin(2πt/S − π/2) over its span S, and ×3
 * for the 30 minutes from 45% of the span (at most 40% of the span) that the burst compresses
 * into about 10 — less where the diurnal ramp is above 1 there. Each gap of the original becomes
 * gap / m.
 */
import { ConfigError } from '../../core/errors.ts';
import type { LlmRequest } from '../../core/request/request.ts';
import type { Ms } from '../../core/request/units.ts';

export const LOAD_SCENARIOS = ['diurnal-burst'] as const;
export type LoadScenario = (typeof LOAD_SCENARIOS)[number];

const BURST_FACTOR = 3;
const BURST_MS = 600_000;
const BURST_AT = 0.45;

export function parseLoadScenario(text: string, option = '--scenario'): LoadScenario {
  if ((LOAD_SCENARIOS as readonly string[]).includes(text)) return text as LoadScenario;
  throw new ConfigError(option, `one of ${LOAD_SCENARIOS.join(', ')}`, text);
}

/** The rate multiplier at the workload's own time `t`, of a workload spanning `spanMs`. */
export function diurnalBurstRate(t: Ms, spanMs: Ms): number {
  const diurnal = 1 + 0.5 * Math.sin((2 * Math.PI * t) / spanMs - Math.PI / 2);
  // The burst covers three times its length of the original — 10 minutes once compressed, or
  // less in a workload too short for it (at most 40% of its span).
  const from = BURST_AT * spanMs;
  const burst = t >= from && t < from + burstSpanMs(spanMs) ? BURST_FACTOR : 1;
  return diurnal * burst;
}

/** The stretch of the workload's own time the burst compresses. */
function burstSpanMs(spanMs: Ms): Ms {
  return Math.min(BURST_FACTOR * BURST_MS, 0.4 * spanMs);
}

/** When the burst starts in re-timed ms, for a workload spanning `spanMs` (its own time). */
export function burstStartMs(spanMs: Ms): Ms {
  let now = 0;
  const from = BURST_AT * spanMs;
  const step = spanMs / 10_000;
  for (let t = 0; t < from; t += step) now += step / diurnalBurstRate(t, spanMs);
  return now;
}

/** `requests` (sorted by arrival, spanning `spanMs`) re-timed by the scenario, lazily. */
export function withLoadScenario(requests: Iterable<LlmRequest>, spanMs: Ms): Iterable<LlmRequest> {
  return {
    *[Symbol.iterator]() {
      let lastOriginal = 0;
      let now = 0;
      for (const r of requests) {
        now += (r.arrivalMs - lastOriginal) / diurnalBurstRate(lastOriginal, spanMs);
        lastOriginal = r.arrivalMs;
        yield { ...r, arrivalMs: now };
      }
    },
  };
}
