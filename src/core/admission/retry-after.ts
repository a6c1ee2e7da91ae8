/**
 * Retry-After for service-capacity rejections: when the work queued ahead is predicted to have
 * drained, rounded up to 100 ms and bounded, so it grows with the queue (never shrinks as the
 * queue grows) and never tells a client to come back in 0 ms or in an hour.
 */
import type { Ms } from '../request/units.ts';

export function drainRetryAfterMs(predictedDrainMs: Ms, minMs: Ms, maxMs: Ms): Ms {
  // An unknowable drain (no rate measured, no replica) is as far off as we ever say.
  if (Number.isNaN(predictedDrainMs)) return maxMs;
  const rounded = Math.ceil(Math.max(0, predictedDrainMs) / 100) * 100;
  return Math.min(maxMs, Math.max(minMs, rounded));
}
