/**
 * A Prometheus histogram for observations made once per streamed token. prom-client hashes a
 * histogram's labels on every observation, even through a child; here a caller takes one
 * series per request (`series(labels)`), and each observation is a bucket search and three
 * additions on plain numbers. The registry reads it at scrape time like any prom-client metric
 * (it asks only for name, help, type and `get()`), and the exposition is the same a prom-client
 * histogram with these buckets would give.
 */
import type { LabelValues, Metric, Registry } from 'prom-client';

export class ArrayHistogramSeries {
  /** Observations per bucket, not cumulative; the last is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  private readonly bounds: readonly number[];

  constructor(bounds: readonly number[]) {
    this.bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]) i++;
    this.counts[i]++;
    this.sum += value;
    this.count++;
  }
}

interface ExportedValue {
  readonly labels: LabelValues<string>;
  readonly value: number;
  readonly metricName: string;
}

export class ArrayHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  private readonly labelNames: readonly L[];
  private readonly bounds: readonly number[];
  private readonly byKey = new Map<string, { labels: LabelValues<L>; s: ArrayHistogramSeries }>();

  constructor(config: {
    name: string;
    help: string;
    labelNames: readonly L[];
    buckets: readonly number[];
    registry: Registry;
  }) {
    this.name = config.name;
    this.help = config.help;
    this.labelNames = config.labelNames;
    this.bounds = [...config.buckets].sort((a, b) => a - b);
    config.registry.registerMetric(this as unknown as Metric);
  }

  /** The series of one label set, made on first use: resolve it once, observe it per token. */
  series(labels: LabelValues<L>): ArrayHistogramSeries {
    const key = this.labelNames.map((l) => labels[l]).join('\u0000');
    let entry = this.byKey.get(key);
    if (entry === undefined) {
      entry = { labels: { ...labels }, s: new ArrayHistogramSeries(this.bounds) };
      this.byKey.set(key, entry);
    }
    return entry.s;
  }

  observe(labels: LabelValues<L>, value: number): void {
    this.series(labels).observe(value);
  }

  reset(): void {
    this.byKey.clear();
  }

  async get() {
    const values: ExportedValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const { labels, s } of this.byKey.values()) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += s.counts[i];
        values.push({ labels: { le, ...labels }, value: cumulative, metricName: bucket });
      });
      values.push({ labels: { le: '+Inf', ...labels }, value: s.count, metricName: bucket });
      values.push({ labels: { ...labels }, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...labels }, value: s.count, metricName: `${this.name}_count` });
    }
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      values,
      aggregator: this.aggregator,
    };
  }
}
