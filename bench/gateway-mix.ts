// The gateway's own account of a load run, from its /metrics scraped before and after: what it
// was offered, what it refused and why, what it admitted and served, what clients cancelled.
// A request's decision is counted once it is settled: `admit` (or `degrade`) when dispatched —
// a stream started — `reject` at the door, `expire` when it waited past its first-token
// deadline (answered 503 too). Requests still waiting when the load stopped are client cancels
// (`queued`), streams still running are cancels too (`streaming`).

/** Growth of the gateway's counters over one or more runs; keys are label values. */
export interface Mix {
  offered: number;
  /** `outcome/reason` → requests. */
  decisions: Record<string, number>;
  invalid: Record<string, number>;
  shared: Record<string, number>;
  /** `stage` → requests. */
  cancels: Record<string, number>;
  completed: number;
}

export type Scrape = Map<string, number>;

export const emptyMix = (): Mix => ({
  offered: 0,
  decisions: {},
  invalid: {},
  shared: {},
  cancels: {},
  completed: 0,
});

/** Prometheus text as `name{labels}` → value. */
export async function scrape(url: string): Promise<Scrape> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return series;
}

/** Waits (up to 10 s) until the gateway answers nothing: cut streams have been counted. */
export async function idle(url: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if ((await scrape(url)).get('goodput_in_flight_requests') === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Adds what the counters grew by between two scrapes to `into`. */
export function addGrowth(into: Mix, before: Scrape, after: Scrape): void {
  const grown = (name: string, labels: string[]) => {
    const out: Record<string, number> = {};
    for (const [key, value] of after) {
      if (!key.startsWith(`${name}{`) && key !== name) continue;
      const d = value - (before.get(key) ?? 0);
      if (d === 0) continue;
      const k = labels.map((l) => key.match(new RegExp(`${l}="([^"]*)"`))?.[1] ?? '').join('/');
      out[k] = (out[k] ?? 0) + d;
    }
    return out;
  };
  into.offered += total(grown('goodput_offered_requests_total', []));
  add(into.decisions, grown('goodput_admission_decisions_total', ['outcome', 'reason']));
  add(into.invalid, grown('goodput_invalid_requests_total', ['reason']));
  add(into.shared, grown('goodput_shared_refusals_total', ['reason']));
  add(into.cancels, grown('goodput_cancels_total', ['stage']));
  into.completed += total(grown('goodput_completed_requests_total', []));
}

/** Decisions whose outcome is one of `outcomes`. */
export function decided(m: Mix, outcomes: readonly string[]): Record<string, number> {
  return Object.fromEntries(
    Object.entries(m.decisions).filter(([k]) => outcomes.includes(k.split('/')[0])),
  );
}

/** The mix in one line; `responses` is what the load generator counted. */
export function mixLine(m: Mix, responses: number): string {
  const refused = decided(m, ['reject', 'expire']);
  const nRefused = total(refused);
  const started = total(decided(m, ['admit', 'degrade']));
  const share = (x: number) => `${((100 * x) / Math.max(1, m.offered)).toFixed(1)}%`;
  const deferred = decided(m, ['defer']);
  return (
    `offered ${count(m.offered)} (wrk saw ${count(responses)} answers; the rest were in flight ` +
    `when it stopped); refused ${count(nRefused)} (${share(nRefused)}: ${counts(refused)}); ` +
    `streams started ${count(started)} (${share(started)}; completed ${count(m.completed)}, ` +
    `cut when wrk stopped ${count(m.cancels.streaming ?? 0)})` +
    (Object.keys(deferred).length > 0 ? `; ${counts(deferred)}` : '') +
    `; client cancels ${counts(m.cancels)}; invalid ${counts(m.invalid)}; ` +
    `shared-state refusals ${counts(m.shared)}`
  );
}

export const count = (x: number) => Math.round(x).toLocaleString('en-US');

const counts = (r: Record<string, number>) =>
  Object.entries(r)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${count(v)}`)
    .join(', ') || 'none';

const total = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);

function add(into: Record<string, number>, from: Record<string, number>): void {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
}
