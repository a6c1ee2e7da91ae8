/**
 * `--scenario diurnal-burst`: a workload's arrivals re-timed to a day's shape and a burst, for
 * autoscaling — built on any trace or generator, its requests and their order unchanged. The
 * instantaneous rate is the workload's own times m(t): a diurnal ramp from half the rate at the
 * start up to 1.5× mid-run and back, m = 1 + ½ sin(2πt/S − π/2) over the workload's span S, and
 * ×3 for 10 minutes from 60% of the span. A gap of the original becomes gap / m at the new time.
 */
import { ConfigError } from '../../core/errors.ts';
import type { LlmRequest } from '../../core/request/request.ts';
import type { Ms } from '../../core/request/units.ts';

export const LOAD_SCENARIOS = ['diurnal-burst'] as const;
export type LoadScenario = (typeof LOAD_SCENARIOS)[number];

const BURST_FACTOR = 3;
const BURST_MS = 600_000;
const BURST_AT = 0.6;

export function parseLoadScenario(text: string, option = '--scenario'): LoadScenario {
  if ((LOAD_SCENARIOS as readonly string[]).includes(text)) return text as LoadScenario;
  throw new ConfigError(option, `one of ${LOAD_SCENARIOS.join(', ')}`, text);
}

/** The rate multiplier at `t` of a workload spanning `spanMs`. */
export function diurnalBurstRate(t: Ms, spanMs: Ms): number {
  const diurnal = 1 + 0.5 * Math.sin((2 * Math.PI * t) / spanMs - Math.PI / 2);
  const burst = t >= BURST_AT * spanMs && t < BURST_AT * spanMs + BURST_MS ? BURST_FACTOR : 1;
  return diurnal * burst;
}

/** `requests` (sorted by arrival, spanning `spanMs`) re-timed by the scenario, lazily. */
export function withLoadScenario(requests: Iterable<LlmRequest>, spanMs: Ms): Iterable<LlmRequest> {
  return {
    *[Symbol.iterator]() {
      let lastOriginal = 0;
      let now = 0;
      for (const r of requests) {
        now += (r.arrivalMs - lastOriginal) / diurnalBurstRate(now, spanMs);
        lastOriginal = r.arrivalMs;
        yield { ...r, arrivalMs: now };
      }
    },
  };
}
