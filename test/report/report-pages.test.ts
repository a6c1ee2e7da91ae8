// The HTML reports in a real browser: `simulate`, `compare` and `bench` write their pages
// through real goodput processes, and Debian's Chromium opens each from its file with the
// network refused. A page passes when nothing was logged as an error and every chart drew its
// data (a Chart.js instance holding every point its spec gave, on a canvas with ink on it). A
// full-page screenshot of each is kept under test/artifacts/.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { runGoodput, startEngine } from '../gateway/process-kit.ts';
import {
  CLIENT_CHARTS,
  SERVER_CHARTS,
  chartStates,
  launch,
  openPage,
  screenshot,
} from './browser-kit.ts';
import { tempDir } from '../temp-dir.ts';

const dir = tempDir('report');
let browser: Browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser.close();
});

/** Opens the page offline; checks errors and every chart; returns the ids of the charts drawn. */
async function checkPage(file: string, shot: string): Promise<string[]> {
  const { page, errors } = await openPage(browser, pathToFileURL(file).href, true);
  const charts = await chartStates(page);
  await screenshot(page, shot);
  await page.close();
  assert.deepEqual(errors, [], 'no console errors, no page errors, no network');
  for (const c of charts) {
    assert.ok(c.points > 0, `${c.id}: has data`);
    assert.equal(c.drawn, c.points, `${c.id}: Chart.js holds every point`);
    assert.ok(c.inked > 1000, `${c.id}: the canvas has ink (${c.inked} pixels)`);
  }
  return charts.map((c) => c.id);
}

const WORKLOAD = [
  '--rate',
  '40',
  '--num-requests',
  '1500',
  '--input',
  'uniform:100:1500',
  '--output',
  'uniform:20:300',
];

test('simulate --html: every chart draws, offline, with autoscaling, tenants and classes', async () => {
  const file = join(dir, 'simulate.html');
  const r = await runGoodput([
    'simulate',
    '--policy',
    'goodput',
    ...WORKLOAD,
    '--tenants',
    'zipf:3:1.2',
    '--classes',
    'interactive:0.7,batch:0.3',
    '--autoscaler',
    'goodput',
    '--max-replicas',
    '3',
    '--html',
    file,
  ]);
  assert.equal(r.code, 0, r.out);
  const ids = await checkPage(file, 'simulate.png');
  for (const id of SERVER_CHARTS)
    assert.ok(ids.includes(id), `${id} drawn (drawn: ${ids.join(', ')})`);
});

test('compare --html: one row and one curve per policy', async () => {
  const file = join(dir, 'compare.html');
  const r = await runGoodput([
    'compare',
    '--policies',
    'baseline-vllm,goodput',
    ...WORKLOAD,
    '--html',
    file,
  ]);
  assert.equal(r.code, 0, r.out);
  const ids = await checkPage(file, 'compare.png');
  assert.ok(ids.includes('outcomes-0') && ids.includes('outcomes-1'), ids.join(', '));
  const html = readFileSync(file, 'utf8');
  assert.match(html, /"label":"baseline-vllm"[\s\S]*"label":"goodput"/);
  // Each policy's run lasts as long as its requests took: both are said.
  assert.match(html, /seed \d+ · [\d.]+ s \/ [\d.]+ s simulated/);
});

test('bench --html against goodput engine: the client-side charts draw', async () => {
  const engine = await startEngine(['--seed', '2']);
  const file = join(dir, 'bench.html');
  const r = await runGoodput([
    'bench',
    '--url',
    engine,
    '--rate',
    '40',
    '--num-requests',
    '120',
    '--input',
    'uniform:50:400',
    '--output',
    'uniform:5:40',
    '--tenants',
    'zipf:2:1',
    '--goodput',
    'ttft:2000',
    '--html',
    file,
  ]);
  assert.equal(r.code, 0, r.out);
  const ids = await checkPage(file, 'bench.png');
  for (const id of CLIENT_CHARTS)
    assert.ok(ids.includes(id), `${id} drawn (drawn: ${ids.join(', ')})`);

  // Without --goodput nothing is judged good: the page draws completed requests, named so.
  const plain = join(dir, 'bench-plain.html');
  const p = await runGoodput(['bench', '--url', engine, '--num-requests', '20', '--html', plain]);
  assert.equal(p.code, 0, p.out);
  const html = readFileSync(plain, 'utf8');
  assert.match(html, /"title":"Completed against offered load"/);
  assert.match(html, /"label":"completed · /);
  assert.doesNotMatch(html, /"label":"completed \/ completed"/);
});

test('capacity --html: the search drawn against the offered rate', async () => {
  const file = join(dir, 'capacity.html');
  const r = await runGoodput([
    'capacity',
    '--input',
    'uniform:100:600',
    '--output',
    'uniform:50:250',
    '--probe-seconds',
    '20',
    '--precision',
    '0.2',
    '--html',
    file,
  ]);
  assert.equal(r.code, 0, r.out);
  const ids = await checkPage(file, 'capacity.png');
  assert.deepEqual(ids, ['capacity-goodput', 'capacity-attainment']);
});
