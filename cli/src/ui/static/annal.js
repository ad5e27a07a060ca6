// annal's own script: sortable tables and the timeline chart. It runs on
// load and after every htmx swap; pages work without it (the tables are
// plain tables, the timeline has its counts as a table).
(function () {
  "use strict";

  // A table of class "sortable": each header becomes a button that sorts
  // the rows by that column (numbers as numbers, a cell's data-sort first).
  function sortable(table) {
    if (table.dataset.sortReady) return;
    table.dataset.sortReady = "1";
    const heads = Array.from(table.querySelectorAll("thead th"));
    heads.forEach(function (th, col) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.textContent = th.textContent;
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", function () {
        const ascending = th.getAttribute("aria-sort") !== "ascending";
        heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        const body = table.tBodies[0];
        const rows = Array.from(body.rows);
        const key = function (row) {
          const cell = row.cells[col];
          if (!cell) return "";
          return cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim();
        };
        const numeric = rows.every(function (r) { const k = key(r); return k === "" || !isNaN(Number(k)); });
        rows.sort(function (a, b) {
          const x = key(a), y = key(b);
          const d = numeric ? Number(x) - Number(y) : x.localeCompare(y);
          return ascending ? d : -d;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }

  const COLOURS = {
    observed: "#8c959f", deletion: "#cf222e", sync: "#1a7f37", prune: "#bc4c00",
    "failed-sync": "#a40e26", credential: "#8250df", fence: "#0969da", audit: "#57606a", other: "#bf8700"
  };

  function iso(seconds) {
    return new Date(seconds * 1000).toISOString().replace(".000Z", "Z");
  }

  // The timeline: bars per mark per bucket, from the JSON the server
  // put in the page. Dragging across it zooms: the page is asked again
  // for the narrower window, so buckets stay server-side.
  function timeline(el) {
    if (el.dataset.ready || typeof uPlot === "undefined") return;
    const source = document.getElementById(el.dataset.source);
    if (!source) return;
    el.dataset.ready = "1";
    const d = JSON.parse(source.textContent);
    const style = getComputedStyle(document.body);
    const fg = style.color;
    const grid = { stroke: style.getPropertyValue("--line") || "#d0d7de", width: 1 };
    const data = [d.starts].concat(d.series.map(function (s) { return s.counts; }));
    const bars = uPlot.paths.bars({ size: [0.9, 60], align: 1 });
    const opts = {
      width: Math.max(el.clientWidth, 320),
      height: 300,
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"); },
      scales: { x: { time: true } },
      cursor: { drag: { x: true, y: false } },
      series: [{ label: "UTC" }].concat(d.series.map(function (s) {
        const colour = COLOURS[s.mark] || fg;
        return { label: s.mark, stroke: colour, fill: colour + "66", paths: bars, points: { show: false } };
      })),
      axes: [
        { stroke: fg, grid: grid, ticks: grid },
        { stroke: fg, grid: grid, ticks: grid, label: "events per " + d.bucket_label }
      ],
      hooks: {
        setSelect: [function (u) {
          if (u.select.width < 4) return;
          const from = u.posToVal(u.select.left, "x");
          const to = u.posToVal(u.select.left + u.select.width, "x");
          const url = new URL(window.location.href);
          url.searchParams.set("from", iso(Math.floor(from)));
          url.searchParams.set("to", iso(Math.ceil(to)));
          window.location.assign(url.toString());
        }]
      }
    };
    new uPlot(opts, data, el);
  }

  function ready(root) {
    root.querySelectorAll("table.sortable").forEach(sortable);
    root.querySelectorAll("[data-timeline]").forEach(timeline);
  }

  document.addEventListener("DOMContentLoaded", function () { ready(document); });
  document.addEventListener("htmx:afterSettle", function () { ready(document); });
})();
