/**
 * Charts as plain data: what a page draws, decided in TypeScript where it is typed and tested,
 * and drawn in the browser by one small generic script (page-script.js) with Chart.js. A
 * report, the live dashboard and a test all read the same specs. Series points are `[x, y]`;
 * for bars x is the category's index; `null` y is a gap (nothing to say in that bucket).
 */
export interface Series {
  readonly label: string;
  readonly points: readonly (readonly [number, number | null])[];
  /** Drawn dashed: a reference (offered load) rather than a result. */
  readonly dashed?: boolean;
}

export interface ChartSpec {
  readonly id: string;
  readonly title: string;
  /** `area` stacks its series; `step` holds each value until the next (a CDF, groups at ticks). */
  readonly kind: 'line' | 'step' | 'area' | 'bar';
  readonly x: {
    readonly title: string;
    readonly log?: boolean;
    readonly categories?: readonly string[];
  };
  readonly y: { readonly title: string; readonly min?: number; readonly max?: number };
  readonly series: readonly Series[];
  /** One line under the chart: what it shows and how it was measured. */
  readonly note?: string;
}

export interface HeadlineTable {
  readonly columns: readonly string[];
  readonly rows: readonly (readonly string[])[];
}

export interface PageSection {
  readonly title: string;
  readonly charts: readonly ChartSpec[];
}

export interface ReportDoc {
  readonly title: string;
  /** What was run: command, seed, workload, in a line or two. */
  readonly subtitle: string;
  readonly headline: HeadlineTable;
  readonly sections: readonly PageSection[];
}

/** `[t, y]` points from parallel arrays. */
export function timePoints(
  t: readonly number[],
  y: readonly (number | null)[],
): [number, number | null][] {
  return t.map((x, i) => [x, y[i] ?? null]);
}

/** One series per key of `byKey`, each over the times `t` (a stacked area's layers). */
export function seriesByKey(
  t: readonly number[],
  byKey: Readonly<Record<string, readonly (number | null)[]>>,
): Series[] {
  return Object.entries(byKey).map(([label, y]) => ({ label, points: timePoints(t, y) }));
}

/** Points a chart has to draw, counting only real values (the page test expects every chart to have some). */
export function pointCount(spec: ChartSpec): number {
  return spec.series.reduce((n, s) => n + s.points.filter(([, y]) => y !== null).length, 0);
}

/** The document without charts that have nothing to draw, and without sections left empty. */
export function withoutEmptyCharts(doc: ReportDoc): ReportDoc {
  return {
    ...doc,
    sections: doc.sections
      .map((s) => ({ ...s, charts: s.charts.filter((c) => pointCount(c) > 0) }))
      .filter((s) => s.charts.length > 0),
  };
}
