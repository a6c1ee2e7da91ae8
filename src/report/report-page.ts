/**
 * One self-contained HTML page: Chart.js and the drawing script inlined, the report's data as
 * JSON in the page, no request to any network — it opens offline from a file, an e-mail or a
 * CI artifact. The data is escaped so that no label (a tenant's name from a trace) can close
 * the script element it sits in.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { withoutEmptyCharts, type ReportDoc } from './chart-spec.ts';

let assets: { chart: string; script: string } | undefined;

function loadAssets(): { chart: string; script: string } {
  const chartDir = dirname(fileURLToPath(import.meta.resolve('chart.js')));
  assets ??= {
    chart: readFileSync(join(chartDir, 'chart.umd.min.js'), 'utf8'),
    script: readFileSync(new URL('./page-script.js', import.meta.url), 'utf8'),
  };
  return assets;
}

/** JSON that is safe inside a script element: `<`, `>` and `&` as unicode escapes. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

function escapeHtml(s: string): string {
  return s.replace(
    /[&<>"]/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? c,
  );
}

const STYLE = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1320px;padding:0 16px;color:#1d2430}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2ea;padding-bottom:4px}
#goodput-subtitle{color:#5a6472;margin:0 0 16px;white-space:pre-wrap}
#goodput-stale{background:#fdecea;border:1px solid #f5c2c0;color:#8a1c14;padding:8px 12px;margin:0 0 16px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}th,td{border:1px solid #dde2ea;padding:4px 8px;text-align:right}
th{background:#f4f6f9}td:first-child,th:first-child{text-align:left}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(600px,1fr));gap:16px}
figure{margin:0;border:1px solid #e6e9ef;border-radius:6px;padding:10px}figcaption{font-weight:600;margin-bottom:6px}
.holder{position:relative;height:300px}.note{color:#5a6472;font-size:12px;margin:6px 0 0}
`;

/** The page; `live`: the drawing script polls `live.url` every `live.everyMs` and redraws. */
export function reportPage(doc: ReportDoc, live?: { url: string; everyMs: number }): string {
  const { chart, script } = loadAssets();
  const poll =
    live === undefined
      ? ''
      : ` data-live-url="${escapeHtml(live.url)}" data-live-every-ms="${live.everyMs}"`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<link rel="icon" href="data:,"><title>${escapeHtml(doc.title)}</title><style>${STYLE}</style></head>
<body><h1>${escapeHtml(doc.title)}</h1><p id="goodput-subtitle"></p>
<table id="goodput-headline"></table><div id="goodput-sections"></div>
<script type="application/json" id="goodput-data"${poll}>${scriptJson(withoutEmptyCharts(doc))}</script>
<script>${chart}</script>
<script>${script}</script>
</body></html>
`;
}
