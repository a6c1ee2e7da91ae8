/**
 * The report page of `goodput capacity`: the probes as a table and as goodput and attainment
 * against the offered rate per group, with the target and the capacity found marked.
 */
import type { CapacityEnvelope } from '../core/autoscale/capacity-envelope.ts';
import type { HeadlineTable, ReportDoc } from './chart-spec.ts';

type Probe = Readonly<Record<string, number | boolean | null>>;
type Envelope = CapacityEnvelope & Record<string, unknown>;

/** The probes by rate: the envelope's own order is the search's. */
function probesByRate(e: Envelope): Probe[] {
  return [...(e.probes as Probe[])].sort(
    (a, b) => (a.rate_per_group_rps as number) - (b.rate_per_group_rps as number),
  );
}

/** Every probe, a row each by rate, every field it measured: the page's table and the terminal's. */
export function probeTable(e: Envelope): HeadlineTable {
  const probes = probesByRate(e);
  const columns = Object.keys(probes[0] ?? {});
  const cell = (v: unknown) =>
    typeof v === 'number'
      ? Number.isInteger(v)
        ? String(v)
        : v.toFixed(3)
      : v === null || v === undefined
        ? '—'
        : String(v);
  return { columns, rows: probes.map((p) => columns.map((c) => cell(p[c]))) };
}

export function capacityReportDoc(e: Envelope, command: string): ReportDoc {
  const probes = probesByRate(e);
  const rate = (p: Probe) => p.rate_per_group_rps as number;
  const span = [0, Math.max(...probes.map(rate))];
  return {
    title: `Goodput capacity — ${e.rate_per_group_rps.toFixed(3)} req/s per group`,
    subtitle: `${command}\n${e.source} · target ${(e.target * 100).toFixed(1)}% of offered requests good · mix ${e.mix.input_mean.toFixed(0)} in / ${e.mix.output_mean.toFixed(0)} out tokens · ${e.groups} group(s)`,
    headline: probeTable(e),
    sections: [
      {
        title: 'Goodput against offered load',
        charts: [
          {
            id: 'capacity-goodput',
            title: 'Goodput per group against the offered rate per group',
            kind: 'line',
            x: { title: 'offered req/s per group' },
            y: { title: 'good req/s per group', min: 0 },
            series: [
              {
                label: 'offered (all good)',
                dashed: true,
                points: span.map((x) => [x, x] as const),
              },
              {
                label: 'goodput',
                points: probes.map(
                  (p) => [rate(p), rate(p) * (p.attainment_offered as number)] as const,
                ),
              },
            ],
            // The run's own goodput (the table's) divides by its drain after the last arrival too:
            // beside the offered rate, it would sit below the line at full attainment.
            note: 'Good requests per second of arrivals: the offered rate × attainment over offered.',
          },
          {
            id: 'capacity-attainment',
            title: 'Attainment against the offered rate per group',
            kind: 'line',
            x: { title: 'offered req/s per group' },
            y: { title: 'good / offered', min: 0, max: 1 },
            series: [
              {
                label: 'attainment',
                points: probes.map((p) => [rate(p), p.attainment_offered as number] as const),
              },
              { label: 'target', dashed: true, points: span.map((x) => [x, e.target] as const) },
              {
                label: 'capacity',
                dashed: true,
                points: [
                  [e.rate_per_group_rps, 0],
                  [e.rate_per_group_rps, 1],
                ],
              },
            ],
          },
        ],
      },
    ],
  };
}
