// alphaqos circuits: the page of `alphaqos circuits serve` (docs/circuits-southbound.md).
// No build step and nothing fetched from elsewhere: it works offline. The
// booking plots are inline SVG; what each plot shows is also kept in
// window.alphaqos.plots[linkId] (steps, shares, axes) for scripts and tests.
"use strict";

const TOKEN_KEY = "alphaqos.circuits.token";
const SVG_NS = "http://www.w3.org/2000/svg";
const PLOT = { width: 900, height: 220, left: 72, right: 12, top: 12, bottom: 28 };
const HOUR_MS = 3600 * 1000;

window.alphaqos = { plots: {}, reservations: [], links: [], lastResult: null, ready: false };

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

async function api(method, path, body) {
  const headers = { "Accept": "application/json" };
  if (token()) headers["Authorization"] = "Bearer " + token();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const answer = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try { data = await answer.json(); } catch (e) { data = null; }
  return { ok: answer.ok, status: answer.status, data };
}

// An RFC 9457 problem as lines: title, detail, each field error with its path.
function problemText(status, p) {
  if (!p || typeof p !== "object") return `HTTP ${status}`;
  const lines = [`${p.title || "HTTP " + status}${p.detail ? ": " + p.detail : ""}`];
  for (const e of p.errors || []) lines.push(`${(e.loc || []).join(".")}: ${e.msg}`);
  if (p.earliest_finish) lines.push(`earliest finish: ${p.earliest_finish}`);
  if (p.max_bookable_bps !== undefined) lines.push(`most bookable: ${fmtRate(p.max_bookable_bps)}`);
  return lines.join("\n");
}

function fmtRate(bps) {
  if (bps === null || bps === undefined) return "";
  for (const [unit, size] of [["Tbps", 1e12], ["Gbps", 1e9], ["Mbps", 1e6], ["Kbps", 1e3]]) {
    if (Math.abs(bps) >= size) return `${+(bps / size).toPrecision(4)} ${unit}`;
  }
  return `${bps} bps`;
}

function fmtTime(iso) { return iso ? iso.replace("T", " ").replace(/(\.\d+)?(Z|\+00:00)$/, "Z") : ""; }

// <input type=datetime-local> holds no zone: the page reads and writes UTC.
function inputToUtc(value) {
  if (!value) return undefined;
  return (value.length === 16 ? value + ":00" : value) + "Z";
}
function utcToInput(date) { return date.toISOString().slice(0, 19); }

// "2Gbps" stays a unit string for the service to parse; digits become a number.
function amount(text) {
  const t = (text || "").trim();
  if (t === "") return undefined;
  return /^\d+$/.test(t) ? Number(t) : t;
}

function plotWindow() {
  const q = new URLSearchParams(location.search);
  const now = Date.now();
  const t0 = q.get("from") ? Date.parse(q.get("from")) : Math.floor(now / HOUR_MS) * HOUR_MS - HOUR_MS;
  const t1 = q.get("to") ? Date.parse(q.get("to")) : t0 + 25 * HOUR_MS;
  return { t0, t1 };
}

async function loadReservations() {
  const r = await api("GET", "/api/v1/reservations");
  const body = document.querySelector("#reservations tbody");
  body.replaceChildren();
  if (!r.ok) {
    const row = body.insertRow();
    const cell = row.insertCell();
    cell.colSpan = 10;
    cell.className = "error";
    cell.textContent = problemText(r.status, r.data);
    return;
  }
  window.alphaqos.reservations = r.data;
  for (const v of r.data) {
    const row = body.insertRow();
    row.dataset.id = v.id;
    const cells = [v.id, v.state, v.src, v.dst, fmtTime(v.start), fmtTime(v.end), fmtRate(v.rate_bps), v.policing, v.owner];
    cells.forEach((text, i) => {
      const c = row.insertCell();
      c.textContent = text === undefined || text === null ? "" : String(text);
      if (i === 6) { c.className = "num"; c.dataset.bps = v.rate_bps; }
    });
    const actions = row.insertCell();
    const verbs = v.state === "held" ? ["commit", "abort"] : [];
    for (const verb of verbs) {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = verb;
      b.addEventListener("click", async () => {
        const done = await api("POST", `/api/v1/reservations/${encodeURIComponent(v.id)}/${verb}`);
        if (!done.ok) alert(problemText(done.status, done.data));
        await refresh();
      });
      actions.append(b);
    }
  }
}

function svgEl(name, attrs, parent) {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  if (parent) parent.append(el);
  return el;
}

// The booked level in force at time t (ms): the last step at or before t, 0 before the first.
function levelAt(steps, t) {
  let level = 0;
  for (const [time, bps] of steps) { if (Date.parse(time) <= t) level = bps; else break; }
  return level;
}

function drawPlot(link, bookings, win) {
  const { width, height, left, right, top, bottom } = PLOT;
  const w = width - left - right, h = height - top - bottom;
  const capacity = link.capacity_bps || bookings.reservable_bps || 1;
  const steps = (bookings.steps || []).slice().sort((a, b) => Date.parse(a[0]) - Date.parse(b[0]));
  const x = t => left + (Math.min(Math.max(t, win.t0), win.t1) - win.t0) / (win.t1 - win.t0) * w;
  const y = bps => top + h - Math.min(bps, capacity) / capacity * h;

  const box = document.createElement("div");
  box.className = "plot";
  const title = document.createElement("h3");
  title.textContent = `${link.id} (${link.a} - ${link.b}): capacity ${fmtRate(capacity)}, reservable ${fmtRate(bookings.reservable_bps)}`;
  box.append(title);
  const svg = svgEl("svg", { class: "bookings", width, height, viewBox: `0 0 ${width} ${height}`, "data-link": link.id });
  box.append(svg);

  // The step function as one filled path: along the baseline's level changes.
  let level = levelAt(steps, win.t0);
  let d = `M ${x(win.t0)} ${y(0)} L ${x(win.t0)} ${y(level)}`;
  for (const [time, bps] of steps) {
    const t = Date.parse(time);
    if (t <= win.t0 || t >= win.t1) continue;
    d += ` L ${x(t)} ${y(level)} L ${x(t)} ${y(bps)}`;
    level = bps;
  }
  d += ` L ${x(win.t1)} ${y(level)} L ${x(win.t1)} ${y(0)} Z`;
  svgEl("path", { class: "booked", d }, svg);
  svgEl("path", { class: "booked-edge", d }, svg);
  svgEl("line", { class: "reservable", x1: left, x2: left + w, y1: y(bookings.reservable_bps), y2: y(bookings.reservable_bps) }, svg);
  svgEl("line", { class: "axis", x1: left, x2: left, y1: top, y2: top + h }, svg);
  svgEl("line", { class: "axis", x1: left, x2: left + w, y1: top + h, y2: top + h }, svg);
  for (const frac of [0, 0.5, 1]) {
    const label = svgEl("text", { x: left - 6, y: y(capacity * frac) + 4, "text-anchor": "end" }, svg);
    label.textContent = fmtRate(capacity * frac);
  }
  for (let t = Math.ceil(win.t0 / (6 * HOUR_MS)) * 6 * HOUR_MS; t <= win.t1; t += 6 * HOUR_MS) {
    const anchor = x(t) > left + w - 40 ? "end" : x(t) < left + 40 ? "start" : "middle";
    const label = svgEl("text", { x: x(t), y: height - 8, "text-anchor": anchor }, svg);
    label.textContent = new Date(t).toISOString().slice(5, 16).replace("T", " ");
  }
  window.alphaqos.plots[link.id] = {
    steps, reservable_bps: bookings.reservable_bps, capacity_bps: capacity, t0: win.t0, t1: win.t1,
    // The plot area in the SVG's own pixels, so a reader can map times and rates to points.
    area: { left, top, width: w, height: h },
  };
  return box;
}

async function loadPlots() {
  const win = plotWindow();
  document.getElementById("window").textContent =
    `${new Date(win.t0).toISOString().slice(0, 16)}Z to ${new Date(win.t1).toISOString().slice(0, 16)}Z`;
  const holder = document.getElementById("plots");
  const links = await api("GET", "/api/v1/links");
  if (!links.ok) { holder.textContent = problemText(links.status, links.data); return; }
  window.alphaqos.links = links.data;
  const from = new Date(win.t0).toISOString(), to = new Date(win.t1).toISOString();
  const boxes = [];
  for (const link of links.data) {
    const b = await api("GET", `/api/v1/links/${encodeURIComponent(link.id)}/bookings?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`);
    if (!b.ok) { const p = document.createElement("p"); p.textContent = problemText(b.status, b.data); boxes.push(p); continue; }
    boxes.push(drawPlot(link, b.data, win));
  }
  window.alphaqos.plots = Object.fromEntries(Object.entries(window.alphaqos.plots).filter(([id]) => links.data.some(l => String(l.id) === id)));
  holder.replaceChildren(...boxes);
}

async function refresh() {
  window.alphaqos.ready = false;
  document.getElementById("who").textContent = token() ? "token set" : "no token: enter one";
  await loadReservations();
  await loadPlots();
  window.alphaqos.ready = true;
}

function setMode(form) {
  const mode = form.querySelector("input[name=mode]:checked").value;
  form.className = mode === "bytes" ? "bytes" : "rate";
}

async function reserve(event) {
  event.preventDefault();
  const form = event.target;
  const f = name => form.elements[name].value;
  const out = document.getElementById("reserve-result");
  const body = { src: f("src").trim(), dst: f("dst").trim(), start: inputToUtc(f("start")), policing: f("policing") };
  if (f("description")) body.description = f("description");
  if (form.className === "bytes") {
    body.bytes = amount(f("bytes"));
    body.deadline = inputToUtc(f("deadline"));
    if (f("margin")) body.margin = Number(f("margin"));
  } else {
    body.rate = amount(f("rate"));
    if (f("end")) body.end = inputToUtc(f("end"));
  }
  out.className = "";
  out.textContent = "…";
  const r = await api("POST", "/api/v1/reservations", body);
  window.alphaqos.lastResult = { status: r.status, body: r.data };
  if (r.ok) {
    out.className = "ok";
    out.textContent = `Reserved: ${r.data.id} (${r.data.state}), ${fmtRate(r.data.rate_bps)} from ${fmtTime(r.data.start)} to ${fmtTime(r.data.end)}`;
  } else {
    out.className = "error";
    out.textContent = problemText(r.status, r.data);
  }
  await refresh();
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("reserve");
  form.querySelectorAll("input[name=mode]").forEach(r => r.addEventListener("change", () => setMode(form)));
  setMode(form);
  const next = new Date(Math.ceil(Date.now() / HOUR_MS) * HOUR_MS);
  form.elements.start.value = utcToInput(next);
  form.elements.end.value = utcToInput(new Date(next.getTime() + HOUR_MS));
  form.elements.deadline.value = utcToInput(new Date(next.getTime() + 2 * HOUR_MS));
  form.addEventListener("submit", reserve);
  document.getElementById("token").value = token();
  document.getElementById("login").addEventListener("submit", e => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
    refresh();
  });
  document.getElementById("refresh").addEventListener("click", refresh);
  refresh();
});
