// The dashboard: the public API only, every text through textContent, no inline style (the
// page's policy forbids it; colours come from classes and app.css's custom properties). The
// rules (periods, comparisons, marks) live in lib.js; this file fetches and draws.
import * as lib from "./lib.js";
import { renderHeatmap } from "./heatmap.js";

const dash = (window.dashboard = { redraws: 0, requests: 0, notModified: 0, refreshes: 0, charts: {}, lib });
const $ = (id) => document.getElementById(id);
const pageQuery = new URLSearchParams(location.search);
// The refresh interval: a minute, or `refresh=N` seconds in the page's URL (tests use 1).
const REFRESH_MS = (() => {
  const s = Number(pageQuery.get("refresh"));
  return Number.isInteger(s) && s >= 1 && s <= 3600 ? s * 1000 : 60000;
})();
const BROWSER_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
// The API's own zone (its default `tz`): the daily reports' calendar, whose days have counts
// from before live counting began. The page starts in it unless its address names another.
const API_ZONE = "Europe/Moscow";

const state = {
  view: null,
  today: "",
  zone: "", // the zone whose days the numbers are counted in, as the API answers
  tz: { series: false, statistics: false, activity: false }, // whether each operation accepts `tz`
  activity: false, // whether the API has hourly counts (chat-activity)
  seq: 0,
  data: null,
};

// ---- fetching: conditional GETs, one ETag per URL ----

const cache = new Map(); // url -> {etag, body}
// The first load's answers asked before the page had read the API's document (prefetch): url ->
// the pending get, taken by the first get of that url, once.
const early = new Map();

// get fetches url; with conditional, the stored ETag goes in If-None-Match and a 304 gives the
// stored body back with changed false. (A request that carries If-None-Match bypasses the
// browser's HTTP cache, so the 304 reaches the page.)
async function get(url, conditional, fresh) {
  if (!conditional && !fresh && early.has(url)) {
    const p = early.get(url);
    early.delete(url);
    return p;
  }
  const prev = cache.get(url);
  const headers = { Accept: "application/json" };
  if (conditional && prev && prev.etag) headers["If-None-Match"] = prev.etag;
  dash.requests++;
  const r = await fetch(url, fresh ? { headers, cache: "no-cache" } : { headers });
  if (r.status === 304 && prev) {
    dash.notModified++;
    return { body: prev.body, changed: false };
  }
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || "HTTP " + r.status);
  cache.set(url, { etag: r.headers.get("ETag"), body });
  return { body, changed: true };
}

// withZone adds `tz` to an operation's query, only when the API says that operation takes it and
// the zone is not the API's default (the addresses of the default stay those of a page without a
// zone, and so do their cached answers).
function withZone(op, q) {
  if (state.tz[op] && state.zone && state.zone !== API_ZONE) q.set("tz", state.zone);
  return q;
}

function activityURL(from, to, server) {
  const q = new URLSearchParams({ from, to });
  if (server) q.set("server", server);
  return "api/chat-activity?" + withZone("activity", q);
}

function statisticsURL(v, server) {
  return "api/chat-statistics?" + withZone("statistics", lib.statisticsParams(v, server));
}

function seriesURL(from, to, server) {
  const q = new URLSearchParams({ from, to });
  if (server) q.set("server", server);
  return "api/chat-series?" + withZone("series", q);
}

function csv(url) {
  return url + (url.includes("?") ? "&" : "?") + "format=csv";
}

// viewURLs are the addresses of the view's first answers (statistics of the period and of the
// previous one, the chart's series, and with activity the hourly counts), in the page's zone.
function viewURLs(v, today, activity) {
  const cs = lib.chartSpan(v, today);
  const urls = {
    stats: statisticsURL(v, ""),
    prev: statisticsURL(lib.previousView(v, today), ""),
    series: seriesURL(cs.from, cs.to, v.server),
  };
  if (activity) {
    const sp = lib.span(v, today);
    urls.activity = activityURL(sp.from, sp.to, v.server);
  }
  return urls;
}

// prefetch asks the first load's answers at once, beside the API's document, at the addresses
// they have when the page counts in the API's own zone: those carry no `tz`, so they are the
// same whatever the document says the operations take. load takes the ones it asks for; when
// the document or the first answers move the page to another zone, or the API has no hourly
// counts, load asks its own and the prefetched ones are dropped unread. A page whose address
// names another zone prefetches nothing.
function prefetch() {
  const asked = pageQuery.get("tz");
  if (asked && asked !== API_ZONE) return;
  const today = lib.dayIn(API_ZONE, new Date());
  const v = lib.normalizeView(Object.fromEntries(pageQuery), today);
  const urls = viewURLs(v, today, true);
  if (v.server) {
    urls.chStats = statisticsURL(v, v.server);
    urls.chPrev = statisticsURL(lib.previousView(v, today), v.server);
  }
  for (const url of Object.values(urls)) {
    const p = get(url, false);
    p.catch(() => {}); // a failure is reported by the load that takes it, or by none
    early.set(url, p);
  }
}

// busiest is the number of the server with the most messages in the period (the first when
// none has a count): whose channels to show when all servers are shown.
function busiest(servers) {
  let best = null;
  for (const s of servers) if (best === null || (s.totalMessages ?? -1) > (best.totalMessages ?? -1)) best = s;
  return best ? String(best.number) : "";
}

// load fetches everything the view shows. conditional (the refresh) asks with If-None-Match and
// answers false, drawing nothing, when no answer changed.
async function load(conditional) {
  const seq = ++state.seq;
  const v = state.view, today = state.today;
  const prevView = lib.previousView(v, today);
  const cs = lib.chartSpan(v, today);
  const urls = viewURLs(v, today, state.activity);
  const seriesP = get(urls.series, conditional);
  const statsP = get(urls.stats, conditional);
  // The channels' answers wait for the statistics alone (they name the busiest server), not for
  // the rest of the first answers: one round trip less before the page can draw.
  const channelsP = statsP.then((stats) => {
    const server = v.server || busiest(stats.body.servers || []);
    if (!server) return { server, answers: [null, null, null] };
    urls.chStats = statisticsURL(v, server);
    urls.chPrev = statisticsURL(prevView, server);
    urls.chSeries = seriesURL(cs.from, cs.to, server);
    return Promise.all([
      get(urls.chStats, conditional),
      get(urls.chPrev, conditional),
      v.server ? seriesP : get(urls.chSeries, conditional),
    ]).then((answers) => ({ server, answers }));
  });
  const [stats, prev, series, activity, channels] = await Promise.all([statsP, get(urls.prev, conditional),
    seriesP, urls.activity ? get(urls.activity, conditional) : null, channelsP]);
  if (seq !== state.seq) return false; // a newer view took over
  const channelServer = channels.server;
  const [chStats, chPrev, chSeries] = channels.answers;
  // The answers name the zone they counted in: when it is not the one the page assumed (the
  // API ignored `tz`, or counts in another zone than its document says), today is that zone's.
  const zone = series.body.timezone;
  if (zone && zone !== state.zone) {
    state.zone = zone;
    state.today = lib.dayIn(zone, new Date());
    renderZone();
    if (state.today !== today) return load(false);
  }
  const changed = [stats, prev, series, chStats, chPrev, chSeries, activity].some((x) => x && x.changed);
  if (conditional && !changed) return false;
  state.data = {
    view: v, prevView, today, urls, channelServer,
    stats: stats.body, prev: prev.body, series: series.body,
    chStats: chStats && chStats.body, chPrev: chPrev && chPrev.body, chSeries: chSeries && chSeries.body,
    activity: activity && activity.body,
  };
  render(state.data);
  return true;
}

// ---- drawing ----

function cell(tr, text, cls) {
  const td = tr.insertCell();
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

// palette reads the series colours from app.css (one source for the canvas and the legend).
function palette() {
  const cs = getComputedStyle(document.documentElement);
  const out = [];
  for (let i = 0; ; i++) {
    const c = cs.getPropertyValue("--c" + i).trim();
    if (!c) break;
    out.push(c);
  }
  return out;
}

function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

// icon is a server's icon, or its initials when it has none or the image fails to load.
function icon(srv) {
  const fallback = () => {
    const s = document.createElement("span");
    s.className = "initials";
    s.textContent = lib.initials(srv.name);
    s.setAttribute("aria-hidden", "true");
    return s;
  };
  if (!srv.iconUrl) return fallback();
  const img = document.createElement("img");
  img.alt = "";
  img.width = 24;
  img.height = 24;
  img.addEventListener("error", () => img.replaceWith(fallback()), { once: true });
  img.src = srv.iconUrl;
  return img;
}

function render(d) {
  dash.redraws++;
  const v = d.view;
  const selected = v.server ? (d.stats.servers || []).find((s) => String(s.number) === v.server) : null;
  const prevSelected = v.server ? (d.prev.servers || []).find((s) => String(s.number) === v.server) : null;
  const span = lib.span(v, d.today);

  // Headline: the period's total against the previous period of the same length.
  $("period-title").textContent = (selected ? selected.name : "All servers") + ", " + lib.periodLabel(v);
  const total = selected ? selected.totalMessages : d.stats.totalMessages;
  const prevTotal = selected ? (prevSelected ? prevSelected.totalMessages : null) : d.prev.totalMessages;
  $("total").textContent = total === null || total === undefined ? "No total: a day of the period has no report" : lib.formatNumber(total) + " messages";
  $("total").dataset.total = total ?? "";
  const progress = $("progress");
  progress.hidden = !span.inProgress;
  progress.textContent = span.inProgress ? (v.period === "day" ? "today, in progress" : "in progress: today is still being counted") : "";
  const ch = lib.change(total, prevTotal);
  const cmp = $("compare");
  cmp.textContent = "";
  cmp.dataset.previous = prevTotal ?? "";
  cmp.dataset.delta = ch ? ch.delta : "";
  const prevLabel = lib.periodLabel(d.prevView);
  if (ch) {
    const b = document.createElement("strong");
    b.className = ch.delta > 0 ? "up" : ch.delta < 0 ? "down" : "";
    b.textContent = ch.text;
    cmp.append(b, " against " + prevLabel + " (" + lib.formatNumber(prevTotal) + ")");
  } else {
    cmp.textContent = "No comparison: " + (total === null || total === undefined ? "this period" : prevLabel) + " has no complete count.";
  }
  const cov = $("coverage");
  if (selected) cov.textContent = "Status: " + selected.status + (prevSelected ? "; " + prevLabel + ": " + prevSelected.status : "");
  else cov.textContent = "Totals count the servers whose reports are complete: " + d.stats.readyServers + " of " + d.stats.totalServers + " now, " + d.prev.readyServers + " of " + d.prev.totalServers + " in " + prevLabel + ".";

  renderServers(d);
  renderTrend(d, selected);
  renderChannels(d);
  renderActivity(d, selected);
  renderUpdated();

  $("servers-csv").href = csv(d.urls.stats);
  $("series-csv").href = csv(d.urls.series);
  const chCSV = $("channels-csv");
  chCSV.hidden = !d.urls.chStats;
  if (d.urls.chStats) chCSV.href = csv(d.urls.chStats);
}

// renderActivity draws the period's messages by hour of week (in the zone asked) from the API's
// hourly counts, and says how many hours were not completely counted.
function renderActivity(d, selected) {
  const section = $("activity");
  section.hidden = !d.activity;
  if (!d.activity) return;
  const { cells, incomplete } = lib.activityCells(d.activity.hours);
  const who = selected ? selected.name : "all servers";
  dash.heatmap = renderHeatmap($("heatmap"), cells, { label: "Messages by hour of week, " + who + ", " + d.activity.tz });
  $("activity-note").textContent = "Hours in " + d.activity.tz + "; " + (incomplete
    ? lib.formatNumber(incomplete) + " of " + lib.formatNumber(cells.length) + " hours not completely counted (before live counting began, or a gap of it)."
    : "every hour counted.");
  $("activity-csv").href = csv(d.urls.activity);
}

function renderServers(d) {
  const tbody = document.querySelector("#servers tbody");
  tbody.textContent = "";
  const prevBy = new Map((d.prev.servers || []).map((s) => [s.number, s]));
  const now = new Date();
  for (const srv of d.stats.servers || []) {
    const tr = tbody.insertRow();
    tr.dataset.number = srv.number;
    if (String(srv.number) === d.view.server) tr.className = "selected";
    tr.insertCell().appendChild(icon(srv));
    cell(tr, srv.name, "name");
    cell(tr, lib.formatNumber(srv.totalMessages), "num total");
    const p = prevBy.get(srv.number);
    const c = lib.change(srv.totalMessages, p ? p.totalMessages : null);
    cell(tr, c ? c.text : "—", "num change");
    cell(tr, srv.status, "status status-" + srv.status);
    const up = cell(tr, srv.generatedAt ? lib.ago(srv.generatedAt, now) : "never", "wide updated");
    up.dataset.at = srv.generatedAt || "";
  }
  // The server picker follows the catalog, keeping the choice.
  const select = $("server");
  const keep = new Set([""]);
  for (const srv of d.stats.servers || []) {
    const value = String(srv.number);
    keep.add(value);
    let opt = [...select.options].find((o) => o.value === value);
    if (!opt) {
      opt = document.createElement("option");
      opt.value = value;
      select.appendChild(opt);
    }
    opt.textContent = srv.number + ". " + srv.name;
  }
  for (const o of [...select.options]) if (!keep.has(o.value)) o.remove();
  select.value = d.view.server;
}

// renderUpdated says how old the newest report shown is; the refresh calls it every minute
// even when nothing changed, so the age keeps counting.
function renderUpdated() {
  const d = state.data;
  if (!d) return;
  const now = new Date();
  let newest = "";
  for (const s of d.stats.servers || []) if (s.generatedAt && s.generatedAt > newest) newest = s.generatedAt;
  const el = $("updated");
  el.dataset.generatedAt = newest;
  el.textContent = (newest ? "Updated " + lib.ago(newest, now) : "No report yet") + " · counted in " + state.zone + " days · checked " + now.toLocaleTimeString("en-GB", { hour: "2-digit", minute: "2-digit" });
  for (const td of document.querySelectorAll("#servers td.updated")) if (td.dataset.at) td.textContent = lib.ago(td.dataset.at, now);
}

// A day sits on the axis at its first instant (as UTC, whatever the zone it was counted in), so
// that its point and its tick label line up.
const dayX = (day) => Date.parse(day + "T00:00:00Z") / 1000;

function compact(n) {
  if (n >= 1e6) return (n / 1e6).toFixed(n >= 1e7 ? 0 : 1) + "M";
  if (n >= 1e3) return (n / 1e3).toFixed(n >= 1e4 ? 0 : 1) + "k";
  return String(n);
}

// chartSize fits a chart to its container's width; the height follows, within bounds.
function chartSize(el) {
  const width = Math.max(1, Math.floor(el.clientWidth));
  return { width, height: Math.round(Math.min(320, Math.max(180, width * 0.45))) };
}

// lineChart draws lines (one per {name, totals, marks, color}) over days: a missing day is a
// gap with a × under it, a stale day a hollow marker, and today's point, still being counted,
// is joined by a dashed segment under a shaded "today, in progress" column instead of a line
// that would read as a fall.
function lineChart(el, key, days, lines, today, legendEl, shared) {
  if (dash.charts[key]) dash.charts[key].destroy();
  el.textContent = "";
  const xs = days.map(dayX);
  const inProgress = days.indexOf(today);
  const linear = uPlot.paths.linear();
  const series = [{}];
  const data = [xs];
  lines.forEach((ln) => {
    data.push(ln.totals);
    series.push({
      label: ln.name,
      stroke: ln.color,
      width: 2,
      spanGaps: false,
      paths: (u, si, i0, i1) => {
        const end = inProgress >= 0 ? Math.min(i1, inProgress - 1) : i1;
        return end < i0 ? null : linear(u, si, i0, end);
      },
      points: { show: true, size: 9, width: 2, fill: "#ffffff", stroke: ln.color, filter: () => ln.marks.stale },
    });
  });
  const text = cssVar("--text") || "#1a1a1a";
  const muted = cssVar("--muted") || "#595959";
  const axis = { stroke: muted, grid: { stroke: "#e6e6e6" }, ticks: { stroke: "#e6e6e6" } };
  const u = new uPlot({
    ...chartSize(el),
    series,
    legend: { show: false },
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 10] } },
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "UTC"),
    axes: [{ ...axis, space: 60 }, { ...axis, size: 48, values: (u, vals) => vals.map(compact) }],
    hooks: {
      draw: [(u) => drawMarks(u, lines, inProgress, text, muted, shared), markFirstChart],
      setCursor: [(u) => hover(u, legendEl, days)],
    },
  }, data, el);
  dash.charts[key] = u;
  return u;
}

// markFirstChart marks the page's timeline once, when a chart has first been drawn with data:
// performance.getEntriesByName("first-chart")[0].startTime is the first load's time to a chart
// (ms since navigation start), as the benchmark reads it; dashboard.firstChart holds it too.
function markFirstChart(u) {
  if (dash.firstChart !== undefined) return;
  if (!u.data.slice(1).some((ys) => ys.some((y) => y !== null && y !== undefined))) return;
  dash.firstChart = performance.mark("first-chart").startTime;
}

// shared: the lines are parts of one server (its channels), whose missing days are one mark.
function drawMarks(u, lines, inProgress, text, muted, shared) {
  const ctx = u.ctx, px = uPlot.pxRatio, { left, top, width, height } = u.bbox;
  ctx.save();
  if (inProgress >= 0) {
    const x = u.valToPos(u.data[0][inProgress], "x", true);
    const half = Math.max(6 * px, u.data[0].length > 1 ? Math.abs(u.valToPos(u.data[0][1], "x", true) - u.valToPos(u.data[0][0], "x", true)) / 2 : 12 * px);
    ctx.fillStyle = "rgba(120,120,120,0.12)";
    ctx.fillRect(Math.max(left, x - half), top, Math.min(2 * half, left + width - (x - half)), height);
    ctx.fillStyle = text;
    ctx.font = 12 * px + "px system-ui, sans-serif";
    ctx.textAlign = x > left + width / 2 ? "right" : "left";
    ctx.textBaseline = "top";
    ctx.fillText("today, in progress", x + (ctx.textAlign === "right" ? -half - 3 * px : half + 3 * px), top + 3 * px);
    lines.forEach((ln, li) => {
      const y1 = ln.totals[inProgress];
      if (y1 === null || y1 === undefined || !u.series[li + 1].show) return;
      const yy1 = u.valToPos(y1, "y", true);
      ctx.strokeStyle = ln.color;
      ctx.lineWidth = 2 * px;
      const y0 = inProgress > 0 ? ln.totals[inProgress - 1] : null;
      if (y0 !== null && y0 !== undefined) {
        ctx.setLineDash([5 * px, 4 * px]);
        ctx.beginPath();
        ctx.moveTo(u.valToPos(u.data[0][inProgress - 1], "x", true), u.valToPos(y0, "y", true));
        ctx.lineTo(x, yy1);
        ctx.stroke();
        ctx.setLineDash([]);
      }
      // A diamond: the point of a day still being counted.
      const r = 5 * px;
      ctx.fillStyle = "#ffffff";
      ctx.beginPath();
      ctx.moveTo(x, yy1 - r);
      ctx.lineTo(x + r, yy1);
      ctx.lineTo(x, yy1 + r);
      ctx.lineTo(x - r, yy1);
      ctx.closePath();
      ctx.fill();
      ctx.stroke();
    });
  }
  // Missing days: a × in the line's colour along the bottom, one row per line.
  ctx.font = "bold " + 12 * px + "px system-ui, sans-serif";
  ctx.textAlign = "center";
  ctx.textBaseline = "bottom";
  (shared ? lines.slice(0, 1) : lines).forEach((ln, li) => {
    ctx.fillStyle = shared ? muted : ln.color;
    const y = top + height - 2 * px - Math.min(li, 5) * 11 * px;
    for (const i of ln.marks.missing) ctx.fillText("×", u.valToPos(u.data[0][i], "x", true), y);
  });
  ctx.restore();
}

// hover shows the day under the cursor and each line's count of it in the legend.
function hover(u, legendEl, days) {
  const i = u.cursor.idx;
  for (const li of legendEl.querySelectorAll("li[data-series]")) {
    const out = li.querySelector(".value");
    const si = Number(li.dataset.series);
    if (i === null || i === undefined) {
      out.textContent = "";
      continue;
    }
    const val = u.data[si][i];
    out.textContent = lib.shortDay(days[i], false) + ": " + (val === null || val === undefined ? "no report" : lib.formatNumber(val));
  }
}

// legend lists one entry per line: its colour, name, sum over the days shown (a dash when no
// day has a report), and, unless the lines share them (one server's channels), how many of
// its days are missing or stale.
function legend(el, lines, shared) {
  el.textContent = "";
  lines.forEach((ln, i) => {
    const li = document.createElement("li");
    li.dataset.series = i + 1;
    const sw = document.createElement("span");
    sw.className = "swatch " + ln.colorClass;
    sw.setAttribute("aria-hidden", "true");
    const name = document.createElement("span");
    name.className = "name";
    name.textContent = ln.name;
    const sum = document.createElement("span");
    sum.className = "sum";
    sum.textContent = ln.totals.every((x) => x === null) ? "—" : lib.formatNumber(ln.totals.reduce((a, b) => a + (b || 0), 0));
    li.append(sw, name, " ", sum);
    if (!shared && (ln.marks.missing.length || ln.marks.stale.length)) {
      const m = document.createElement("span");
      m.className = "counts";
      m.dataset.missing = ln.marks.missing.length;
      m.dataset.stale = ln.marks.stale.length;
      const parts = [];
      if (ln.marks.missing.length) parts.push(ln.marks.missing.length + " missing");
      if (ln.marks.stale.length) parts.push(ln.marks.stale.length + " stale");
      m.textContent = " (" + parts.join(", ") + ")";
      li.append(m);
    }
    const val = document.createElement("span");
    val.className = "value";
    li.append(" ", val);
    el.appendChild(li);
  });
}

function renderTrend(d, selected) {
  const colors = palette();
  const servers = (d.series.servers || []).filter((s) => !selected || s.number === selected.number);
  const lines = servers.map((s, i) => ({
    name: s.name,
    totals: s.totals,
    marks: lib.marks(d.series.days, s.statuses, d.today),
    color: colors[i % colors.length],
    colorClass: "c" + (i % colors.length),
  }));
  dash.trend = { days: d.series.days, lines: lines.map((l) => ({ name: l.name, totals: l.totals, marks: l.marks })) };
  legend($("legend"), lines);
  lineChart($("chart"), "main", d.series.days, lines, d.today, $("legend"));
  const missing = lines.reduce((a, l) => a + l.marks.missing.length, 0);
  const stale = lines.reduce((a, l) => a + l.marks.stale.length, 0);
  const m = $("marks");
  m.dataset.missing = missing;
  m.dataset.stale = stale;
  const inProgress = d.series.days.indexOf(d.today) >= 0;
  m.dataset.inProgress = inProgress;
  m.textContent = lib.shortDay(d.series.days[0], false) + " – " + lib.shortDay(d.series.days[d.series.days.length - 1], true) + ": " +
    missing + " missing " + (missing === 1 ? "day" : "days") + ", " + stale + " stale " + (stale === 1 ? "day" : "days") +
    (lines.length > 1 ? " over " + lines.length + " servers" : "") + (inProgress ? "; " + lib.shortDay(d.today, false) + " is today, in progress." : ".");
}

function renderChannels(d) {
  const title = $("channels-title");
  const summary = $("channels-summary");
  const tbody = document.querySelector("#channels tbody");
  tbody.textContent = "";
  const chartEl = $("channel-chart");
  if (!d.chStats) {
    title.textContent = "Channels";
    summary.textContent = "No server to show.";
    if (dash.charts.channels) dash.charts.channels.destroy();
    delete dash.charts.channels;
    chartEl.textContent = "";
    $("channel-legend").textContent = "";
    return;
  }
  const srv = d.chStats.server;
  const series = d.chSeries.servers[0];
  const mk = lib.marks(d.chSeries.days, series ? series.statuses : [], d.today);
  title.textContent = "Channels of " + srv.name + (d.view.server ? "" : " (the busiest server; choose another above)");
  summary.textContent = srv.name + ", " + lib.periodLabel(d.view) + ": " + lib.formatNumber(srv.totalMessages) + " messages (" + srv.status + ")" +
    (mk.missing.length || mk.stale.length ? "; on the chart " + mk.missing.length + " missing, " + mk.stale.length + " stale " + (mk.stale.length === 1 ? "day" : "days") : "") + ".";
  summary.dataset.total = srv.totalMessages ?? "";
  const prev = new Map(((d.chPrev && d.chPrev.server.channels) || []).map((c) => [c.id, c.messages]));
  const prevKnown = d.chPrev && d.chPrev.server.totalMessages !== null;
  for (const c of srv.channels) {
    const tr = tbody.insertRow();
    tr.dataset.id = c.id;
    cell(tr, "#" + c.name, "name");
    cell(tr, lib.formatNumber(c.messages), "num");
    const ch = prevKnown ? lib.change(c.messages, prev.get(c.id) ?? 0) : null;
    cell(tr, ch ? ch.text : "—", "num change");
  }
  if (srv.channels.length === 0) {
    const td = cell(tbody.insertRow(), srv.status === "missing" ? "No channel counts: a day of the period has no report." : "No messages in this period.", "muted");
    td.colSpan = 3;
  }
  const colors = palette();
  const other = cssVar("--other") || "#616161";
  const trend = lib.channelTrend((series && series.channels) || [], d.chSeries.days, lib.TOP_CHANNELS);
  const lines = trend.map((t, i) => ({ ...t, marks: mk, color: t.other ? other : colors[i % colors.length], colorClass: t.other ? "other" : "c" + (i % colors.length) }));
  dash.channelTrend = lines.map((l) => ({ name: l.name, totals: l.totals, other: !!l.other }));
  legend($("channel-legend"), lines, true);
  lineChart(chartEl, "channels", d.chSeries.days, lines, d.today, $("channel-legend"), true);
}

// ---- sizing: every chart follows its container (window resizes, rotation, layout) ----

const resizer = new ResizeObserver((entries) => {
  for (const e of entries) {
    for (const u of Object.values(dash.charts)) {
      if (u.root.parentNode !== e.target) continue;
      const size = chartSize(e.target);
      if (size.width !== u.width || size.height !== u.height) u.setSize(size);
    }
  }
});
resizer.observe($("chart"));
resizer.observe($("channel-chart"));

// ---- the form, the URL and the zone picker ----

function showFields(period) {
  $("month-field").hidden = period !== "month";
  $("date-field").hidden = period !== "day" && period !== "week";
  $("date-label").textContent = period === "week" ? "Week ending" : "Day";
  $("from-field").hidden = period !== "range";
  $("to-field").hidden = period !== "range";
}

function fillForm(v) {
  $("period").value = v.period;
  $("month-input").value = v.month;
  $("date-input").value = v.date;
  $("from-input").value = v.from;
  $("to-input").value = v.to;
  $("server").value = v.server;
  showFields(v.period);
}

function readForm() {
  let from = $("from-input").value, to = $("to-input").value;
  if (from && to && from > to) [from, to] = [to, from];
  return lib.normalizeView({
    period: $("period").value, month: $("month-input").value, date: $("date-input").value, from, to, server: $("server").value,
  }, state.today);
}

// pageURL is the view's address: the period, its dates and the server in the query string, so a
// view can be shared and reloaded (and the zone and refresh interval, when set).
function pageURL(v) {
  const q = lib.viewParams(v);
  if (state.tz.series && state.zone && state.zone !== API_ZONE) q.set("tz", state.zone);
  if (pageQuery.has("refresh")) q.set("refresh", pageQuery.get("refresh"));
  return location.pathname + "?" + q;
}

function show(v, push) {
  state.view = v;
  fillForm(v);
  if (push) history.pushState(null, "", pageURL(v));
  else history.replaceState(null, "", pageURL(v));
  return load(false).then(() => setError(""), (e) => {
    // A shared link to a server the catalog no longer has shows all servers, and says so.
    if (v.server && e.message === "server_not_found") {
      return show({ ...v, server: "" }, false).then(() => setError("Server " + v.server + " is not in the catalog: showing all servers."));
    }
    setError("Could not load: " + e.message);
    throw e;
  });
}

function setError(msg) {
  const el = $("error");
  el.hidden = !msg;
  el.textContent = msg;
}

function applyForm() {
  show(readForm(), true).catch(() => {});
}

// renderZone fills the zone picker. It is enabled only when the API's document says chat-series
// takes `tz`; otherwise it shows the zone the API counts in, disabled, and says why.
function renderZone() {
  const sel = $("tz");
  sel.textContent = "";
  const now = new Date();
  const zones = state.tz.series ? (Intl.supportedValuesOf ? Intl.supportedValuesOf("timeZone") : []) : [];
  for (const z of new Set([state.zone, ...(state.tz.series ? [API_ZONE, BROWSER_ZONE] : []), ...zones])) {
    // A zone a fraction of an hour off UTC is refused by the API: not offered (but the current).
    if (!z || (z !== state.zone && !lib.wholeHourZone(z, now))) continue;
    const o = document.createElement("option");
    o.value = z;
    o.textContent = z + (z === BROWSER_ZONE ? " (this device)" : "");
    sel.appendChild(o);
  }
  sel.value = state.zone;
  sel.disabled = !state.tz.series;
  const note = $("tz-note");
  note.textContent = state.tz.series
    ? "Days are counted in " + state.zone + "." + (state.tz.statistics ? "" : " Totals and channels are counted in the API's own zone.")
    : "Days are counted in " + state.zone + ": the API does not take another time zone yet" + (BROWSER_ZONE !== state.zone ? " (this device is in " + BROWSER_ZONE + ")" : "") + ".";
}

async function init() {
  // What the API accepts, from its own document.
  let doc = null;
  const docP = get("api/openapi.json", false, true);
  try {
    prefetch();
  } catch (e) {
    early.clear(); // only a head start: the load asks for itself
  }
  try {
    // Revalidated, never taken from the browser's cache unasked: after a deploy the page must
    // see what the new API takes.
    doc = (await docP).body;
  } catch (e) {
    doc = null; // without the document the page keeps to the API's defaults
  }
  state.tz.series = lib.acceptsParam(doc, "/api/chat-series", "tz");
  state.tz.statistics = lib.acceptsParam(doc, "/api/chat-statistics", "tz");
  state.tz.activity = lib.acceptsParam(doc, "/api/chat-activity", "tz");
  state.activity = lib.hasPath(doc, "/api/chat-activity");
  // The zone: the visitor's (or the URL's) when the API takes one, else the zone the API
  // documents; the first answer corrects it if the API counts in another.
  const fixed = doc && doc.components && doc.components.schemas && doc.components.schemas.Series &&
    doc.components.schemas.Series.properties && doc.components.schemas.Series.properties.timezone &&
    doc.components.schemas.Series.properties.timezone.const;
  const asked = pageQuery.get("tz");
  const valid = (z) => { try { new Intl.DateTimeFormat("en", { timeZone: z }); return true; } catch (e) { return false; } };
  state.zone = state.tz.series ? (asked && valid(asked) && lib.wholeHourZone(asked, new Date()) ? asked : API_ZONE) : (fixed || BROWSER_ZONE);
  state.today = lib.dayIn(state.zone, new Date());
  renderZone();

  $("view-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    applyForm();
  });
  $("period").addEventListener("change", () => {
    showFields($("period").value);
    applyForm();
  });
  for (const id of ["month-input", "date-input", "from-input", "to-input", "server"]) $(id).addEventListener("change", applyForm);
  $("tz").addEventListener("change", () => {
    if (!state.tz.series) return;
    state.zone = $("tz").value;
    state.today = lib.dayIn(state.zone, new Date());
    renderZone();
    applyForm();
  });
  window.addEventListener("popstate", () => {
    show(lib.normalizeView(Object.fromEntries(new URLSearchParams(location.search)), state.today), false).catch(() => {});
  });

  await show(lib.normalizeView(Object.fromEntries(pageQuery), state.today), false);
  early.clear(); // whatever the first load did not take is not an answer of a later view
  setInterval(refresh, REFRESH_MS);
}

let refreshing = false;
// refresh asks again for everything shown; the charts are redrawn only when an answer changed.
async function refresh() {
  if (refreshing || !state.view) return;
  refreshing = true;
  try {
    // A new day moves today: the in-progress mark and the defaults follow.
    const today = lib.dayIn(state.zone, new Date());
    const dayTurned = today !== state.today;
    state.today = today;
    const changed = await load(!dayTurned);
    dash.refreshes++;
    dash.lastRefreshChanged = changed;
    setError("");
  } catch (e) {
    setError("Could not refresh: " + e.message);
  } finally {
    renderUpdated();
    refreshing = false;
  }
}

dash.refresh = refresh;
dash.state = state;
dash.ready = init()
  .then(() => { document.body.dataset.ready = "true"; })
  .catch((e) => {
    document.body.dataset.ready = "error";
    document.body.dataset.error = String(e && e.message ? e.message : e);
  });
