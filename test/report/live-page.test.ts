// A live page as Chromium draws it while its data changes under it: sections that appear, move
// and go keep their own headings, in the document's order, each chart under its own; and when
// its data cannot be fetched, the page says since when it has not been refreshed, rather than
// passing old figures off as live.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { ChartSpec, ReportDoc } from '../../src/report/chart-spec.ts';
import { reportPage } from '../../src/report/report-page.ts';
import { launch, openPage } from './browser-kit.ts';

const chart = (id: string): ChartSpec => ({
  id,
  title: `chart ${id}`,
  kind: 'line',
  x: { title: 'time (s)' },
  y: { title: 'requests / s' },
  series: [
    {
      label: id,
      points: [
        [0, 1],
        [1, 2],
        [2, 3],
      ],
    },
  ],
});

const doc = (sections: [string, string[]][]): ReportDoc => ({
  title: 'live',
  subtitle: 'live · refreshes',
  headline: { columns: ['offered'], rows: [['1']] },
  sections: sections.map(([title, ids]) => ({ title, charts: ids.map(chart) })),
});

// Before any traffic: one section; then three, the first new; then one gone.
const DOCS = [
  doc([['Over time', ['replicas']]]),
  doc([
    ['Latency', ['ttft', 'tpot']],
    ['Goodput', ['goodput']],
    ['Over time', ['replicas']],
  ]),
  doc([
    ['Latency', ['ttft']],
    ['Over time', ['replicas']],
  ]),
];

// Runs in the page: each section's heading and the charts under it, in order.
const LAYOUT = `Array.from(document.querySelectorAll('#goodput-sections > section')).map((s) =>
  [s.querySelector('h2').textContent, Array.from(s.querySelectorAll('figure')).map((f) => f.id)])`;

test('a live page redraws sections that come, move and go under their own headings, and says when it is stale', async () => {
  // The document the data URL serves now: the test moves it on.
  let current = 0;
  let failing = false;
  const server = createServer((req, res) => {
    if (req.url === '/data') {
      if (failing) {
        res.writeHead(503).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(DOCS[current]));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(reportPage(DOCS[0], { url: '/data', everyMs: 100 }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const browser = await launch();
  try {
    const { page, errors } = await openPage(browser, url);
    assert.deepEqual(await page.evaluate(LAYOUT), [['Over time', ['chart-replicas']]]);
    current = 1;
    await page.waitForFunction(`${LAYOUT}.length === 3`, undefined, { timeout: 10_000 });
    assert.deepEqual(await page.evaluate(LAYOUT), [
      ['Latency', ['chart-ttft', 'chart-tpot']],
      ['Goodput', ['chart-goodput']],
      ['Over time', ['chart-replicas']],
    ]);
    current = 2;
    await page.waitForFunction(`${LAYOUT}.length === 2`, undefined, { timeout: 10_000 });
    assert.deepEqual(await page.evaluate(LAYOUT), [
      ['Latency', ['chart-ttft']],
      ['Over time', ['chart-replicas']],
    ]);
    assert.equal(await page.isVisible('#goodput-stale'), false);
    failing = true;
    await page.waitForSelector('#goodput-stale', { state: 'visible', timeout: 10_000 });
    assert.match(
      (await page.textContent('#goodput-stale')) ?? '',
      /^Not refreshed since .+: the gateway answered HTTP 503\. Retrying\.$/,
    );
    failing = false;
    await page.waitForSelector('#goodput-stale', { state: 'hidden', timeout: 10_000 });
    // The failed fetches of the data are the browser's own lines; nothing else went wrong.
    assert.deepEqual(
      errors.filter((e) => !/503|Failed to load resource|\/data$/.test(e)),
      [],
    );
  } finally {
    await browser.close();
    server.close();
  }
});
