// The dashboard's pure rules: calendar arithmetic on YYYY-MM-DD days, the periods a view
// covers and the one it is compared with, the marks of a series (missing, stale, in progress),
// the per-channel trend and the wording of numbers and ages. No DOM, no fetch: app.js does the
// I/O and the drawing, and web_test.go runs these in Chromium as table tests.

export const PERIODS = ["month", "week", "day", "range"];
// The statistics answer a range of at most this many days, both ends counted.
export const MAX_RANGE_DAYS = 31;
// The channel trend draws this many channels by name; the rest are summed as "other".
export const TOP_CHANNELS = 5;

const DAY_RE = /^\d{4}-\d{2}-\d{2}$/;
const MONTH_RE = /^\d{4}-\d{2}$/;

// isDay is true for a real calendar day written YYYY-MM-DD.
export function isDay(s) {
  if (typeof s !== "string" || !DAY_RE.test(s)) return false;
  const d = new Date(s + "T00:00:00Z");
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
}

// isMonth is true for YYYY-MM with a month 01..12.
export function isMonth(s) {
  if (typeof s !== "string" || !MONTH_RE.test(s)) return false;
  const m = Number(s.slice(5));
  return m >= 1 && m <= 12;
}

// dayIn is the calendar day of the instant now in the IANA zone tz, as YYYY-MM-DD.
export function dayIn(tz, now) {
  const p = new Intl.DateTimeFormat("en-CA", { timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit" }).formatToParts(now);
  const get = (t) => p.find((x) => x.type === t).value;
  return get("year") + "-" + get("month") + "-" + get("day");
}

// addDays moves a day by n calendar days.
export function addDays(day, n) {
  const d = new Date(day + "T00:00:00Z");
  d.setUTCDate(d.getUTCDate() + n);
  return d.toISOString().slice(0, 10);
}

// daysBetween counts the days from a to b, both included (1 for a == b, 0 or less when b < a).
export function daysBetween(a, b) {
  return Math.round((Date.parse(b + "T00:00:00Z") - Date.parse(a + "T00:00:00Z")) / 86400000) + 1;
}

// addMonths moves a YYYY-MM month by n months.
export function addMonths(month, n) {
  const y = Number(month.slice(0, 4)), m = Number(month.slice(5)) - 1 + n;
  const d = new Date(Date.UTC(y, m, 1));
  return d.toISOString().slice(0, 7);
}

// monthLength is the number of days of a YYYY-MM month.
export function monthLength(month) {
  const y = Number(month.slice(0, 4)), m = Number(month.slice(5));
  return new Date(Date.UTC(y, m, 0)).getUTCDate();
}

// normalizeView completes a view read from a URL: unknown or malformed values fall back to
// the defaults for today (this month, all servers), so a shared link never shows an error for
// a typo, and a range longer than the statistics accept keeps its last 31 days.
export function normalizeView(q, today) {
  const v = { period: "month", month: today.slice(0, 7), date: today, from: addDays(today, -6), to: today, server: "" };
  if (PERIODS.includes(q.period)) v.period = q.period;
  if (isMonth(q.month)) v.month = q.month;
  if (isDay(q.date)) v.date = q.date;
  if (isDay(q.from) && isDay(q.to) && q.from <= q.to) {
    v.from = q.from;
    v.to = q.to;
    if (daysBetween(v.from, v.to) > MAX_RANGE_DAYS) v.from = addDays(v.to, -(MAX_RANGE_DAYS - 1));
  }
  if (typeof q.server === "string" && /^\d{1,20}$/.test(q.server)) v.server = q.server;
  return v;
}

// viewParams is what a view puts in the page's URL: the period and only the fields it uses,
// so that a shared link says exactly what it shows.
export function viewParams(v) {
  const q = new URLSearchParams({ period: v.period });
  if (v.period === "month") q.set("month", v.month);
  if (v.period === "week" || v.period === "day") q.set("date", v.date);
  if (v.period === "range") {
    q.set("from", v.from);
    q.set("to", v.to);
  }
  if (v.server) q.set("server", v.server);
  return q;
}

// statisticsParams is the chat-statistics query of a view (server only when one is asked for).
export function statisticsParams(v, server) {
  const q = viewParams({ ...v, server: "" });
  if (server) q.set("server", server);
  return q;
}

// span is the days a view covers, first and last, and whether it is still being counted (it
// ends today or later). A week ends on its date; a day is one day.
export function span(v, today) {
  let from, to;
  switch (v.period) {
    case "month":
      from = v.month + "-01";
      to = v.month + "-" + String(monthLength(v.month)).padStart(2, "0");
      break;
    case "week":
      from = addDays(v.date, -6);
      to = v.date;
      break;
    case "day":
      from = to = v.date;
      break;
    default:
      from = v.from;
      to = v.to;
  }
  return { from, to, inProgress: from <= today && today <= to };
}

// chartSpan is the days the daily chart draws for a view: the view's days up to today (days
// not yet begun have no report and are no news), and for a single day the 30 days that end on
// it, since one point is no trend.
export function chartSpan(v, today) {
  const s = span(v, today);
  let from = s.from, to = s.to;
  if (v.period === "day") from = addDays(to, -29);
  if (to > today && from <= today) to = today;
  return { from, to };
}

// previousView is the period a view is compared with: the same length just before it. A day
// is the day before, a week the week before, a range the as many days before; a past month
// the month before; the month in progress its days so far against the same days of the month
// before (a whole previous month against a partial one would always read as a fall).
export function previousView(v, today) {
  const s = span(v, today);
  switch (v.period) {
    case "day":
      return { ...v, date: addDays(v.date, -1) };
    case "week":
      return { ...v, date: addDays(v.date, -7) };
    case "range": {
      const n = daysBetween(v.from, v.to);
      return { ...v, from: addDays(v.from, -n), to: addDays(v.from, -1) };
    }
    default: {
      const prev = addMonths(v.month, -1);
      if (!s.inProgress) return { ...v, month: prev };
      const n = Math.min(daysBetween(s.from, today), monthLength(prev));
      return { ...v, period: "range", from: prev + "-01", to: prev + "-" + String(n).padStart(2, "0") };
    }
  }
}

// periodLabel names a view's days for people.
export function periodLabel(v) {
  switch (v.period) {
    case "month":
      return monthName(v.month);
    case "day":
      return shortDay(v.date, true);
    case "week":
      return shortDay(addDays(v.date, -6), false) + " – " + shortDay(v.date, true);
    default:
      return v.from === v.to ? shortDay(v.from, true) : shortDay(v.from, false) + " – " + shortDay(v.to, true);
  }
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const LONG_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

function monthName(month) {
  return LONG_MONTHS[Number(month.slice(5)) - 1] + " " + month.slice(0, 4);
}

// shortDay is "Nov 3" or, with the year, "Nov 3, 2026".
export function shortDay(day, withYear) {
  const s = MONTHS[Number(day.slice(5, 7)) - 1] + " " + Number(day.slice(8));
  return withYear ? s + ", " + day.slice(0, 4) : s;
}

// marks classifies the days of a server's series: missing (no report: a gap), stale (a
// report the collector could not refresh), and the index of today, whose count is still
// growing and so is drawn apart, not as a fall (-1 when today is not in the series).
export function marks(days, statuses, today) {
  const missing = [], stale = [];
  statuses.forEach((st, i) => {
    if (st === "missing") missing.push(i);
    else if (st === "stale") stale.push(i);
  });
  return { missing, stale, inProgress: days.indexOf(today) };
}

// channelTrend keeps the top channels of a server's series by their sum over the days and
// sums the others into one "other" line; a day without a report stays null in every line.
export function channelTrend(channels, days, top) {
  const sum = (ts) => ts.reduce((a, b) => a + (b || 0), 0);
  const sorted = channels.map((c) => ({ id: c.id, name: c.name, totals: c.totals, sum: sum(c.totals) }))
    .sort((a, b) => b.sum - a.sum || (a.id.length - b.id.length) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const lines = sorted.slice(0, top).map((c) => ({ id: c.id, name: "#" + c.name, totals: c.totals, sum: c.sum }));
  const rest = sorted.slice(top);
  if (rest.length > 0) {
    const totals = days.map((_, i) => (rest.every((c) => c.totals[i] === null) ? null : rest.reduce((a, c) => a + (c.totals[i] || 0), 0)));
    lines.push({ id: "", name: "other (" + rest.length + " channels)", totals, sum: sum(totals), other: true });
  }
  return lines;
}

// change compares a total with the previous period's: null when either is unknown.
export function change(cur, prev) {
  if (cur === null || cur === undefined || prev === null || prev === undefined) return null;
  const delta = cur - prev;
  const pct = prev === 0 ? null : (delta / prev) * 100;
  let text = (delta > 0 ? "+" : delta < 0 ? "−" : "±") + formatNumber(Math.abs(delta));
  if (pct !== null) text += " (" + (pct > 0 ? "+" : pct < 0 ? "−" : "±") + Math.abs(pct).toFixed(Math.abs(pct) < 10 ? 1 : 0) + " %)";
  return { delta, pct, text };
}

// formatNumber writes a count with thousands separators; an unknown count is a dash.
export function formatNumber(n) {
  return n === null || n === undefined ? "—" : n.toLocaleString("en-US");
}

// ago says how long before now an RFC 3339 instant was, in the largest whole unit.
export function ago(iso, now) {
  const t = Date.parse(iso);
  if (!iso || Number.isNaN(t)) return "";
  const s = Math.max(0, Math.floor((now.getTime() - t) / 1000));
  if (s < 60) return "just now";
  const unit = (n, one) => n + " " + one + (n === 1 ? "" : "s") + " ago";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  if (s < 86400) return unit(Math.floor(s / 3600), "hour");
  return unit(Math.floor(s / 86400), "day");
}

// initials is what stands for a server whose icon cannot be shown: the first letters of its
// first two words, upper-cased ("?" for a name without letters or digits).
export function initials(name) {
  const words = String(name).split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  const s = words.slice(0, 2).map((w) => Array.from(w)[0].toUpperCase()).join("");
  return s || "?";
}

// acceptsParam reads the API's OpenAPI document: true when the GET operation of path takes a
// query parameter called name (refs into components resolved). The dashboard asks the API what
// it accepts instead of assuming it, so a later API lights the feature up without a new page.
export function acceptsParam(doc, path, name) {
  const op = doc && doc.paths && doc.paths[path];
  if (!op || !op.get) return false;
  const resolve = (p) => {
    if (p && typeof p.$ref === "string" && p.$ref.startsWith("#/")) {
      return p.$ref.slice(2).split("/").reduce((o, k) => (o ? o[k] : undefined), doc);
    }
    return p;
  };
  return [...(op.parameters || []), ...(op.get.parameters || [])].map(resolve).some((p) => p && p.in === "query" && p.name === name);
}

// hasPath reads the API's OpenAPI document: true when it documents GET on path.
export function hasPath(doc, path) {
  return !!(doc && doc.paths && doc.paths[path] && doc.paths[path].get);
}

// wholeHourZone is true when the IANA zone z is a whole number of hours off UTC at the instant
// now: the API counts in UTC hours and refuses a zone half an hour off (Asia/Kolkata), so the
// picker offers only the others. An unknown zone is false.
export function wholeHourZone(z, now) {
  try {
    const part = new Intl.DateTimeFormat("en-US", { timeZone: z, timeZoneName: "longOffset" })
      .formatToParts(now).find((p) => p.type === "timeZoneName");
    const m = part && /^GMT(?:[+-](\d{2}):(\d{2}))?$/.exec(part.value);
    return !!m && (m[2] === undefined || m[2] === "00");
  } catch (e) {
    return false;
  }
}

// activityCells turns chat-activity's hours into the heatmap's {hour, count}: hour is the hour
// of the week (0 = Monday 00:00–01:00) read from each hour's start as the API wrote it, in the
// zone asked (its local date and hour, whatever the offset), so that a day of 23 or 25 hours
// fills its cells as the clock on the wall did. Returns the cells and how many hours were not
// complete (status other than ok).
export function activityCells(hours) {
  const cells = [];
  let incomplete = 0;
  for (const h of hours || []) {
    const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):/.exec(h && h.start);
    if (!m) continue;
    const dow = (new Date(Date.UTC(+m[1], +m[2] - 1, +m[3])).getUTCDay() + 6) % 7;
    cells.push({ hour: dow * 24 + Number(m[4]), count: h.total });
    if (h.status !== "ok") incomplete++;
  }
  return { cells, incomplete };
}
