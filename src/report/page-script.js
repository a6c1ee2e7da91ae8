// Draws the charts of a Goodput report or dashboard page from the JSON in #goodput-data, with
// Chart.js (inlined before this script). Generic on purpose: what to draw is decided in
// TypeScript (src/report/chart-spec.ts); this only maps a spec to a Chart.js config. The page
// records each chart and its point count on window.goodputCharts for tests, and
// window.goodputUpdate(doc) redraws from a new document. A live page (the dashboard) names its
// data's URL and period on #goodput-data; this script then polls it and redraws.
/* global Chart, document, window */
(function () {
  'use strict';
  const charts = new Map();

  function config(spec) {
    const bar = spec.kind === 'bar';
    const datasets = spec.series.map(function (s) {
      const data = bar
        ? s.points.map(function (p) {
            return p[1];
          })
        : s.points.map(function (p) {
            return { x: p[0], y: p[1] };
          });
      return {
        label: s.label,
        data: data,
        borderWidth: bar ? 0 : 1.5,
        // A line of one or two points would not show without them.
        pointRadius: s.points.length < 3 ? 3 : 0,
        stepped: spec.kind === 'step' ? 'after' : false,
        fill: spec.kind === 'area' ? (s === spec.series[0] ? 'origin' : '-1') : false,
        borderDash: s.dashed ? [6, 4] : undefined,
        spanGaps: false,
      };
    });
    const stacked = spec.kind === 'area';
    return {
      type: bar ? 'bar' : 'line',
      data: bar ? { labels: spec.x.categories || [], datasets: datasets } : { datasets: datasets },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        parsing: bar ? undefined : false,
        normalized: true,
        plugins: { legend: { position: 'bottom', labels: { boxWidth: 12 } } },
        scales: {
          x: bar
            ? { title: { display: true, text: spec.x.title } }
            : {
                type: spec.x.log ? 'logarithmic' : 'linear',
                title: { display: true, text: spec.x.title },
              },
          y: {
            stacked: stacked,
            min: spec.y.min,
            max: spec.y.max,
            title: { display: true, text: spec.y.title },
          },
        },
      },
    };
  }

  function count(spec) {
    return spec.series.reduce(function (n, s) {
      return (
        n +
        s.points.filter(function (p) {
          return p[1] !== null;
        }).length
      );
    }, 0);
  }

  function draw(doc) {
    const root = document.getElementById('goodput-sections');
    const seen = new Set();
    window.goodputCharts = [];
    doc.sections.forEach(function (section, si) {
      let box = document.getElementById('section-' + si);
      if (!box) {
        box = document.createElement('section');
        box.id = 'section-' + si;
        const h = document.createElement('h2');
        h.textContent = section.title;
        box.appendChild(h);
        const grid = document.createElement('div');
        grid.className = 'grid';
        box.appendChild(grid);
        root.appendChild(box);
      }
      const grid = box.querySelector('.grid');
      section.charts.forEach(function (spec) {
        seen.add(spec.id);
        let entry = charts.get(spec.id);
        if (!entry) {
          const fig = document.createElement('figure');
          fig.id = 'chart-' + spec.id;
          const title = document.createElement('figcaption');
          title.textContent = spec.title;
          fig.appendChild(title);
          const holder = document.createElement('div');
          holder.className = 'holder';
          const canvas = document.createElement('canvas');
          holder.appendChild(canvas);
          fig.appendChild(holder);
          if (spec.note) {
            const note = document.createElement('p');
            note.className = 'note';
            note.textContent = spec.note;
            fig.appendChild(note);
          }
          grid.appendChild(fig);
          entry = { chart: new Chart(canvas, config(spec)), canvas: canvas };
          charts.set(spec.id, entry);
        } else {
          const next = config(spec);
          entry.chart.data = next.data;
          entry.chart.update('none');
          const fig = document.getElementById('chart-' + spec.id);
          fig.querySelector('figcaption').textContent = spec.title;
          const note = fig.querySelector('.note');
          if (note) note.textContent = spec.note || '';
        }
        window.goodputCharts.push({ id: spec.id, points: count(spec) });
      });
    });
    charts.forEach(function (entry, id) {
      if (!seen.has(id)) {
        entry.chart.destroy();
        const fig = document.getElementById('chart-' + id);
        if (fig) fig.remove();
        charts.delete(id);
      }
    });
  }

  function table(headline) {
    const t = document.getElementById('goodput-headline');
    t.textContent = '';
    const head = t.createTHead().insertRow();
    headline.columns.forEach(function (c) {
      const th = document.createElement('th');
      th.textContent = c;
      head.appendChild(th);
    });
    const body = t.createTBody();
    headline.rows.forEach(function (row) {
      const tr = body.insertRow();
      row.forEach(function (cell) {
        tr.insertCell().textContent = cell;
      });
    });
  }

  window.goodputUpdate = function (doc) {
    document.getElementById('goodput-subtitle').textContent = doc.subtitle;
    table(doc.headline);
    draw(doc);
  };
  const data = document.getElementById('goodput-data');
  window.goodputUpdate(JSON.parse(data.textContent));
  window.goodputReady = true;
  const liveUrl = data.dataset.liveUrl;
  if (liveUrl) {
    window.setInterval(function () {
      window
        .fetch(liveUrl, { cache: 'no-store' })
        .then(function (r) {
          return r.ok ? r.json() : null;
        })
        .then(function (doc) {
          if (doc) window.goodputUpdate(doc);
        })
        .catch(function () {});
    }, Number(data.dataset.liveEveryMs));
  }
})();
