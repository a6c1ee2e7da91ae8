import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ReportDoc } from './chart-spec.ts';
import { reportPage, scriptJson } from './report-page.ts';

const hostile = '</script><script>alert(1)</script><!--';

test('report page: data inside the page cannot close its script element', () => {
  assert.equal(JSON.parse(scriptJson({ s: hostile })).s, hostile);
  assert.doesNotMatch(scriptJson({ s: hostile }), /<|>/);
  const doc: ReportDoc = {
    title: `a ${hostile}`,
    subtitle: hostile,
    headline: { columns: [hostile], rows: [[hostile]] },
    sections: [
      {
        title: hostile,
        charts: [
          {
            id: 'c',
            title: hostile,
            kind: 'line',
            x: { title: 't' },
            y: { title: 'y' },
            series: [{ label: hostile, points: [[0, 1]] }],
          },
        ],
      },
    ],
  };
  const page = reportPage(doc);
  assert.equal(
    page.split('<script>alert(1)').length,
    1,
    'the hostile markup appears nowhere as markup',
  );
  assert.match(page, /<title>a &lt;\/script&gt;/);
});

test('report page: self-contained — Chart.js inlined, nothing fetched', () => {
  const page = reportPage({
    title: 't',
    subtitle: '',
    headline: { columns: [], rows: [] },
    sections: [],
  });
  assert.match(page, /Chart\.js v4/);
  assert.doesNotMatch(page, /<script[^>]+src=|<link[^>]+href="(?!data:)|https?:\/\/cdn/);
});
