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

  // A section's box, keyed by its title: a live document may gain, lose or reorder sections.
  function sectionBox(root, title) {
    const key = 'section-' + encodeURIComponent(title);
    let box = document.getElementById(key);
    if (!box) {
      box = document.createElement('section');
      box.id = key;
      const h = document.createElement('h2');
      h.textContent = title;
      box.appendChild(h);
      const grid = document.createElement('div');
      grid.className = 'grid';
      box.appendChild(grid);
    }
    return box;
  }

  function figure(spec) {
    const fig = document.createElement('figure');
    fig.id = 'chart-' + spec.id;
    const title = document.createElement('figcaption');
    title.textContent = spec.title;
    fig.appendChild(title);
    const holder = document.createElement('div');
    holder.className = 'holder';
    holder.appendChild(document.createElement('canvas'));
    fig.appendChild(holder);
    const note = document.createElement('p');
    note.className = 'note';
    note.textContent = spec.note || '';
    note.hidden = !spec.note;
    fig.appendChild(note);
    return fig;
  }

  // Each section and chart in the document's order, under its own heading: a chart that moved
  // section moves with its canvas, and what the document no longer has goes.
  function draw(doc) {
    const root = document.getElementById('goodput-sections');
    const seen = new Set();
    const boxes = new Set();
    window.goodputCharts = [];
    doc.sections.forEach(function (section) {
      if (section.charts.length === 0) return;
      const box = sectionBox(root, section.title);
      boxes.add(box);
      root.appendChild(box);
      const grid = box.querySelector('.grid');
      section.charts.forEach(function (spec) {
        seen.add(spec.id);
        let entry = charts.get(spec.id);
        if (!entry) {
          const fig = figure(spec);
          grid.appendChild(fig);
          entry = { chart: new Chart(fig.querySelector('canvas'), config(spec)), fig: fig };
          charts.set(spec.id, entry);
        } else {
          grid.appendChild(entry.fig);
          const next = config(spec);
          entry.chart.data = next.data;
          entry.chart.update('none');
          entry.fig.querySelector('figcaption').textContent = spec.title;
          const note = entry.fig.querySelector('.note');
          note.textContent = spec.note || '';
          note.hidden = !spec.note;
        }
        window.goodputCharts.push({ id: spec.id, points: count(spec) });
      });
    });
    charts.forEach(function (entry, id) {
      if (!seen.has(id)) {
        entry.chart.destroy();
        entry.fig.remove();
        charts.delete(id);
      }
    });
    Array.from(root.children).forEach(function (box) {
      if (!boxes.has(box)) box.remove();
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
    // A refresh that fails says so on the page, with when the figures were last fresh: a page
    // that only went quiet would pass old figures off as live.
    let freshAt = new Date();
    const stale = document.createElement('p');
    stale.id = 'goodput-stale';
    stale.hidden = true;
    document.getElementById('goodput-subtitle').after(stale);
    const failed = function (why) {
      stale.hidden = false;
      stale.textContent =
        'Not refreshed since ' + freshAt.toLocaleTimeString() + ': ' + why + '. Retrying.';
    };
    window.setInterval(function () {
      window
        .fetch(liveUrl, { cache: 'no-store' })
        .then(function (r) {
          if (!r.ok) throw new Error('the gateway answered HTTP ' + r.status);
          return r.json();
        })
        .then(function (doc) {
          window.goodputUpdate(doc);
          freshAt = new Date();
          stale.hidden = true;
        })
        .catch(function (e) {
          failed(e instanceof TypeError ? 'the gateway is unreachable' : e.message);
        });
    }, Number(data.dataset.liveEveryMs));
  }
})();
