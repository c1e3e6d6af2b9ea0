// The hour-of-week heatmap: 7 rows (Monday first) of 24 hours. It draws whatever array of
// {hour, count} it is given, hour 0 being Monday 00:00–01:00 in the zone of the counts (the page
// turns chat-activity's hours into them: lib.activityCells). An SVG, not a canvas: it scales
// with its container through the viewBox, each cell carries its own text for screen readers
// and tooltips, and colours are presentation attributes, which the page's policy (no inline
// styles) allows.

const SVG = "http://www.w3.org/2000/svg";
export const DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
export const HOURS_PER_WEEK = 168;
// From the lightest to the darkest cell: a sequential blue ramp; a cell without messages is
// the first colour, the busiest hour the last.
export const RAMP = ["#f0f4f8", "#c6dbef", "#9ecae1", "#6baed6", "#3182bd", "#08519c"];

const CELL = 20, LEFT = 36, TOP = 18;

// bucket maps a count to its colour index: 0 for none, else 1..RAMP.length-1 in proportion to
// the busiest hour.
export function bucket(count, max) {
  if (!(count > 0) || !(max > 0)) return 0;
  return Math.max(1, Math.ceil((count / max) * (RAMP.length - 1)));
}

// renderHeatmap replaces the content of container with the heatmap of cells and returns what
// it drew: the count per hour of week (entries with an hour outside 0..167, a non-integer hour
// or a negative or non-finite count are left out; repeated hours add up) and the busiest count.
export function renderHeatmap(container, cells, opts) {
  const label = (opts && opts.label) || "Messages by hour of week";
  const counts = new Array(HOURS_PER_WEEK).fill(0);
  for (const c of cells || []) {
    if (!c || !Number.isInteger(c.hour) || c.hour < 0 || c.hour >= HOURS_PER_WEEK) continue;
    if (typeof c.count !== "number" || !Number.isFinite(c.count) || c.count < 0) continue;
    counts[c.hour] += c.count;
  }
  const max = Math.max(0, ...counts);

  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 " + (LEFT + 24 * CELL) + " " + (TOP + 7 * CELL));
  svg.setAttribute("role", "img");
  svg.setAttribute("class", "heatmap");
  const title = document.createElementNS(SVG, "title");
  title.textContent = label + " (busiest hour: " + max.toLocaleString("en-US") + ")";
  svg.appendChild(title);
  for (let h = 0; h < 24; h += 3) {
    const t = document.createElementNS(SVG, "text");
    t.setAttribute("x", LEFT + h * CELL + 2);
    t.setAttribute("y", TOP - 5);
    t.setAttribute("class", "heatmap-axis");
    t.textContent = String(h).padStart(2, "0");
    svg.appendChild(t);
  }
  DAYS.forEach((d, row) => {
    const t = document.createElementNS(SVG, "text");
    t.setAttribute("x", 0);
    t.setAttribute("y", TOP + row * CELL + CELL - 6);
    t.setAttribute("class", "heatmap-axis");
    t.textContent = d;
    svg.appendChild(t);
  });
  counts.forEach((n, hour) => {
    const row = Math.floor(hour / 24), col = hour % 24;
    const r = document.createElementNS(SVG, "rect");
    r.setAttribute("x", LEFT + col * CELL);
    r.setAttribute("y", TOP + row * CELL);
    r.setAttribute("width", CELL - 2);
    r.setAttribute("height", CELL - 2);
    const b = bucket(n, max);
    r.setAttribute("fill", RAMP[b]);
    r.dataset.hour = hour;
    r.dataset.count = n;
    r.dataset.bucket = b;
    const tip = document.createElementNS(SVG, "title");
    tip.textContent = DAYS[row] + " " + String(col).padStart(2, "0") + ":00–" + String(col + 1).padStart(2, "0") + ":00: " + n.toLocaleString("en-US") + " messages";
    r.appendChild(tip);
    svg.appendChild(r);
  });
  container.textContent = "";
  container.appendChild(svg);
  return { counts, max };
}
