import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Histogram, Registry } from 'prom-client';
import { ArrayHistogram } from './array-histogram.ts';

const buckets = [0.01, 0.1, 1, 10];
const config = { name: 'gap_seconds', help: 'A gap.', labelNames: ['class'] as const, buckets };

test('scraped exactly as a prom-client histogram fed the same observations', async () => {
  const mine = new Registry();
  const theirs = new Registry();
  const a = new ArrayHistogram({ ...config, registry: mine });
  const b = new Histogram({ ...config, labelNames: ['class'], registers: [theirs] });
  const seen: Array<[string, number]> = [
    ['interactive', 0.004],
    ['interactive', 0.01], // on a bound: counted in that bucket (le is ≤)
    ['interactive', 0.5],
    ['batch', 42],
    ['interactive', 0.01],
  ];
  const series = a.series({ class: 'interactive' });
  for (const [cls, v] of seen) {
    if (cls === 'interactive') series.observe(v);
    else a.observe({ class: cls }, v);
    b.observe({ class: cls }, v);
  }
  assert.equal(await mine.metrics(), await theirs.metrics());
});

test('one series per label set; reset empties it', async () => {
  const registry = new Registry();
  const h = new ArrayHistogram({ ...config, registry });
  assert.equal(h.series({ class: 'x' }), h.series({ class: 'x' }));
  h.observe({ class: 'x' }, 1);
  assert.match(await registry.metrics(), /gap_seconds_count\{class="x"\} 1/);
  registry.resetMetrics();
  assert.doesNotMatch(await registry.metrics(), /gap_seconds_count/);
});
