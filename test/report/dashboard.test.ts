// The live dashboard of a real `goodput serve` under load: Debian's Chromium opens /dashboard
// with the admin token (as a browser sends it: Basic auth's password), the page refreshes from
// /dashboard/data while `goodput bench` drives a burst of requests in two classes, and every
// chart comes to hold data with no error logged. Without the token: 401 asking for it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runBench } from '../../src/loadgen/run-bench.ts';
import { wallClock } from '../../src/runtime/wall-clock.ts';
import { wallTimers } from '../../src/runtime/wall-timers.ts';
import { engines, gateway, metricValue, until } from '../gateway/gateway-kit.ts';
import { startServe } from '../gateway/process-kit.ts';
import { SERVER_CHARTS, chartStates, launch, openPage, screenshot } from './browser-kit.ts';

const TOKEN = 'dash-secret-1';

test('dashboard: live charts of a gateway under load, behind the admin token', async () => {
  const { url } = await startServe(['--admin-token', TOKEN, '--seed', '5']);

  const bare = await fetch(`${url}/dashboard`);
  assert.equal(bare.status, 401);
  assert.match(bare.headers.get('www-authenticate') ?? '', /^Basic realm="goodput dashboard"/);
  const wrong = await fetch(`${url}/dashboard/data`, { headers: { authorization: 'Bearer nope' } });
  assert.equal(wrong.status, 401);

  const load = runBench(
    {
      baseUrl: url,
      endpoint: 'chat',
      workload: {
        rate: 40,
        numRequests: 400,
        input: 'uniform:50:800',
        output: 'uniform:10:120',
        classes: 'interactive:0.7,batch:0.3',
      },
      seed: 3,
      sendClass: true,
      percentiles: [99],
      timeoutMs: 60_000,
    },
    { clock: wallClock, timers: wallTimers() },
  );

  let run!: Awaited<typeof load>;
  const browser = await launch();
  try {
    const context = await browser.newContext({
      httpCredentials: { username: 'ops', password: TOKEN },
    });
    const { page, errors } = await openPage(context, `${url}/dashboard`);
    run = await load;
    assert.ok((run.metrics.completed as number) > 0, 'the gateway served the burst');
    // The page refreshes every 2 s: wait for the refresh that follows the burst's end.
    await page.waitForFunction(
      `window.goodputCharts.length >= 8 && window.goodputCharts.every((c) => c.points > 0)`,
      undefined,
      { timeout: 20_000 },
    );
    const charts = await chartStates(page);
    await screenshot(page, 'dashboard.png');
    assert.deepEqual(errors, []);
    for (const id of SERVER_CHARTS)
      assert.ok(
        charts.some((c) => c.id === id),
        `${id} drawn: ${charts.map((c) => c.id).join(', ')}`,
      );
    for (const c of charts) {
      assert.equal(c.drawn, c.points, `${c.id}: Chart.js holds every point`);
      assert.ok(c.inked > 1000, `${c.id}: the canvas has ink`);
    }
    const headline = await page.textContent('#goodput-headline');
    assert.match(headline ?? '', /offered.*admitted/s);
  } finally {
    await browser.close();
  }

  // Every request that reached the gateway is offered, and only those: the refused fetches
  // without the token were no requests for the fleet, and one the bench never got an answer
  // to the connection of (status 0) never arrived. The dashboard says what /metrics says.
  const dashboardOffered = async () => {
    const res = await fetch(`${url}/dashboard/data`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return Number(((await res.json()) as { headline: { rows: string[][] } }).headline.rows[0][0]);
  };
  const byStatus = run.metrics.failed_by_status as Record<string, number>;
  const unreached = byStatus['0'] ?? 0;
  const metricsOffered = await metricValue(url, 'goodput_offered_requests_total');
  assert.equal(metricsOffered, 400 - unreached, JSON.stringify(run.metrics.failed_by_reason));
  // The dashboard counts a request at its decision: wait for the last to be told.
  await until(async () => (await dashboardOffered()) === metricsOffered).catch(() => {});
  assert.equal(await dashboardOffered(), metricsOffered);
});

test('dashboard without an admin token: open, the page names its live data, the data is JSON', async () => {
  const gw = await gateway(await engines(1));
  const page = await fetch(`${gw.url}/dashboard`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /text\/html/);
  assert.match(
    await page.text(),
    /id="goodput-data" data-live-url="\/dashboard\/data" data-live-every-ms="2000"/,
  );
  const data = await fetch(`${gw.url}/dashboard/data`);
  assert.equal(data.status, 200);
  assert.equal(data.headers.get('cache-control'), 'no-store');
  const doc = (await data.json()) as { title: string; headline: { columns: string[] } };
  assert.match(doc.title, /^Goodput gateway — llama-3-8b/);
  assert.equal(doc.headline.columns[0], 'offered');
});
