// Debian's Chromium driven by playwright-core for the page suites: headless, no sandbox (tests
// may run as root), no GPU, and none of the background connections a closed network refuses.
// A page passes when it loaded with no console error or page error and every chart on it has
// drawn: a Chart.js instance with data, on a canvas that is not blank.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts');

export async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `${CHROMIUM} is missing: npm test installs Debian's chromium (scripts/provision-tests.sh)`,
    );
  return await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** What any report draws; the simulator's and the gateway's add the server's queue and replicas. */
export const CLIENT_CHARTS = [
  'ttft-cdf',
  'tpot-cdf',
  'goodput-time',
  'attainment-class',
  'outcomes-0',
  'tenant-share-0',
];
export const SERVER_CHARTS = [...CLIENT_CHARTS, 'queue-0', 'replicas-0'];

export interface ChartState {
  readonly id: string;
  /** Points its spec gave it. */
  readonly points: number;
  /** Points Chart.js holds across its datasets. */
  readonly drawn: number;
  /** Pixels on its canvas that are not transparent. */
  readonly inked: number;
}

/**
 * Opens `url`, collecting console and page errors; resolves once the page says it is drawn.
 * `offline`: any http(s) request the page makes is refused and reported as an error (a report
 * must need nothing from a network).
 */
export async function openPage(
  browser: Browser | BrowserContext,
  url: string,
  offline = false,
): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const errors: string[] = [];
  if (offline)
    await page.route(/^https?:/, async (route) => {
      errors.push(`network request from an offline page: ${route.request().url()}`);
      await route.abort();
    });
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()}`));
  await page.goto(url);
  await page.waitForFunction('window.goodputReady === true');
  return { page, errors };
}

// Runs in the page (the test's TypeScript has no DOM types, so it travels as source).
const CHART_STATES = `window.goodputCharts.map(({ id, points }) => {
  const canvas = document.querySelector('#chart-' + CSS.escape(id) + ' canvas');
  const chart = Chart.getChart(canvas);
  const drawn = chart ? chart.data.datasets.reduce((n, d) => n + d.data.filter((v) => v !== null && !(typeof v === 'object' && v.y === null)).length, 0) : 0;
  const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let inked = 0;
  for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) inked++;
  return { id, points, drawn, inked };
})`;

export async function chartStates(page: Page): Promise<ChartState[]> {
  return (await page.evaluate(CHART_STATES)) as ChartState[];
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = join(ARTIFACTS, name);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
