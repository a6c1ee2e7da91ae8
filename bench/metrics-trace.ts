// What the gateway's control state did over a live run, read from its /metrics every few
// hundred milliseconds: the step share flow control plans with, each backend's measured pace
// and KV usage, the queue, the requests in flight and the event loop's lag. A run's outcome
// says that admitted requests expired or streams missed; this says what the gateway believed at
// the time (a cut of the share, replicas running slow, a queue that did not drain).
// One JSON line per reading: {"t_ms": since the trace began, "<series>": value, …}.
import { appendFileSync, writeFileSync } from 'node:fs';
import { scrape } from './gateway-mix.ts';

/** The series traced: every label set of each. */
const TRACED = [
  'goodput_flow_step_gap_share',
  'goodput_late_token_gaps_total',
  'goodput_backend_pace_ratio',
  'goodput_backend_kv_usage_ratio',
  'goodput_queued_requests',
  'goodput_in_flight_requests',
  'goodput_event_loop_lag_seconds',
];

/** Reads `url`'s /metrics every `periodMs` into `file` until the returned stop is called. */
export function traceMetrics(url: string, file: string, periodMs = 250): () => void {
  writeFileSync(file, '');
  const t0 = performance.now();
  let reading = false;
  const timer = setInterval(() => {
    // A reading still out (the gateway is slow to answer) is not doubled up.
    if (reading) return;
    reading = true;
    scrape(url)
      .then((series) => {
        const line: Record<string, number> = { t_ms: Math.round(performance.now() - t0) };
        for (const [name, value] of series) {
          if (TRACED.some((t) => name === t || name.startsWith(`${t}{`))) line[name] = value;
        }
        appendFileSync(file, `${JSON.stringify(line)}\n`);
      })
      .catch(() => {})
      .finally(() => (reading = false));
  }, periodMs);
  return () => clearInterval(timer);
}
