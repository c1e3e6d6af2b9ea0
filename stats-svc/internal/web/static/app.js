// The dashboard: only the public API, Moscow days throughout.
"use strict";
(function () {
  const TZ = "Europe/Moscow";
  const dash = (window.dashboard = {});

  // todayMoscow is today's Moscow day as YYYY-MM-DD.
  function todayMoscow() {
    const p = new Intl.DateTimeFormat("en-CA", { timeZone: TZ, year: "numeric", month: "2-digit", day: "2-digit" }).formatToParts(new Date());
    const get = (t) => p.find((x) => x.type === t).value;
    return get("year") + "-" + get("month") + "-" + get("day");
  }
  // addDays moves a YYYY-MM-DD day by n calendar days.
  function addDays(day, n) {
    const d = new Date(day + "T00:00:00Z");
    d.setUTCDate(d.getUTCDate() + n);
    return d.toISOString().slice(0, 10);
  }
  // dayX places a Moscow day on the chart's axis: its noon in Moscow (UTC+3), in seconds.
  const dayX = (day) => Date.parse(day + "T09:00:00Z") / 1000;

  async function api(path) {
    const r = await fetch(path, { headers: { Accept: "application/json" } });
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || r.status);
    return body;
  }
  function cell(tr, text, cls) {
    const td = tr.insertCell();
    td.textContent = text;
    if (cls) td.className = cls;
    return td;
  }
  const fmt = (n) => (n === null || n === undefined ? "—" : n.toLocaleString("en-US"));

  async function loadServers() {
    const s = await api("api/chat-statistics");
    document.getElementById("month").textContent = "Month " + s.month + " (Moscow), " + s.readyServers + " of " + s.totalServers + " servers ready";
    const tbody = document.querySelector("#servers tbody");
    tbody.textContent = "";
    const select = document.getElementById("server");
    select.textContent = "";
    for (const srv of s.servers) {
      const tr = tbody.insertRow();
      tr.dataset.number = srv.number;
      const icon = tr.insertCell();
      if (srv.iconUrl) {
        const img = document.createElement("img");
        img.src = srv.iconUrl;
        img.alt = "";
        icon.appendChild(img);
      }
      cell(tr, srv.name, "name");
      cell(tr, fmt(srv.totalMessages), "num total");
      cell(tr, srv.status, "status status-" + srv.status);
      const opt = document.createElement("option");
      opt.value = srv.number;
      opt.textContent = srv.number + ". " + srv.name;
      select.appendChild(opt);
    }
    dash.month = s;
  }

  async function loadChart() {
    const to = todayMoscow(), from = addDays(to, -29);
    const s = await api("api/chat-series?from=" + from + "&to=" + to);
    const xs = s.days.map(dayX);
    const data = [xs];
    const series = [{ value: (u, v) => (v == null ? "" : new Date(v * 1000).toLocaleDateString("en-CA", { timeZone: TZ })) }];
    const palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
    s.servers.forEach((srv, i) => {
      const color = palette[i % palette.length];
      data.push(srv.totals); // null: no report that day, drawn as a gap
      series.push({ label: srv.name, stroke: color, width: 2, spanGaps: false });
      // Stale days: markers only, no line.
      data.push(srv.totals.map((v, j) => (srv.statuses[j] === "stale" ? v : null)));
      series.push({ label: srv.name + " (stale)", stroke: color, paths: () => null, points: { show: true, size: 9, fill: "#fff", stroke: color }, spanGaps: false });
    });
    const el = document.getElementById("chart");
    el.textContent = "";
    const width = Math.max(280, el.clientWidth || document.body.clientWidth - 24);
    dash.series = s;
    dash.chart = new uPlot({
      width: width, height: 260, series: series,
      scales: { x: { time: true } },
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), TZ),
      axes: [{}, { size: 60 }],
    }, data, el);
  }

  function periodQuery() {
    const period = document.getElementById("period").value;
    const q = new URLSearchParams({ period: period, server: document.getElementById("server").value });
    const v = (id) => document.getElementById(id).value;
    if (period === "month" && v("month-input")) q.set("month", v("month-input"));
    if ((period === "day" || period === "week") && v("date-input")) q.set("date", v("date-input"));
    if (period === "range") { q.set("from", v("from-input")); q.set("to", v("to-input")); }
    return q;
  }

  async function loadChannels() {
    const summary = document.getElementById("channels-summary");
    const tbody = document.querySelector("#channels tbody");
    tbody.textContent = "";
    try {
      const s = await api("api/chat-statistics?" + periodQuery());
      const srv = s.server;
      const span = s.month ? s.month : s.from + " … " + s.to;
      summary.textContent = srv.name + ", " + span + ": " + fmt(srv.totalMessages) + " messages (" + srv.status + ")";
      summary.dataset.total = srv.totalMessages === null ? "" : srv.totalMessages;
      for (const ch of srv.channels) {
        const tr = tbody.insertRow();
        tr.dataset.id = ch.id;
        cell(tr, "#" + ch.name, "name");
        cell(tr, fmt(ch.messages), "num");
      }
      dash.channels = s;
    } catch (e) {
      summary.textContent = "Error: " + e.message;
    }
  }

  function init() {
    const today = todayMoscow();
    document.getElementById("month-input").value = today.slice(0, 7);
    document.getElementById("date-input").value = today;
    document.getElementById("from-input").value = addDays(today, -6);
    document.getElementById("to-input").value = today;
    document.getElementById("channels-form").addEventListener("submit", (ev) => { ev.preventDefault(); loadChannels(); });
    dash.ready = Promise.all([loadServers().then(loadChannels), loadChart()])
      .then(() => { document.body.dataset.ready = "true"; })
      .catch((e) => { document.body.dataset.ready = "error"; document.body.dataset.error = String(e); });
  }
  init();
})();
