// okra dashboard: one server-sent-events stream brings every change; the page never polls.
"use strict";

const state = { meta: {}, cells: {}, rollouts: {}, clustersets: {}, targetgroups: {}, freezes: {}, cell: null };
const SECTIONS = ["cells", "rollouts", "clustersets", "targetgroups", "freezes"];
let source = null;
let streamCell = null;
let filterText = "";
window.okraFrames = 0;

const esc = (v) => String(v === null || v === undefined ? "" : v)
  .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const badge = (text, cls) => `<span class="badge ${esc(cls || text)}">${esc(text)}</span>`;
const $ = (id) => document.getElementById(id);

function route() {
  const parts = (location.hash.replace(/^#\/?/, "") || "cells").split("/").map(decodeURIComponent);
  return { page: parts[0], ns: parts[1], name: parts[2], rollout: parts[3] };
}

function connect() {
  const r = route();
  const want = r.page === "cell" ? `${r.ns}/${r.name}` : null;
  if (source && want === streamCell) return;
  if (source) source.close();
  streamCell = want;
  for (const k of SECTIONS) state[k] = {};
  state.cell = null;
  source = new EventSource("/api/events" + (want ? "?cell=" + encodeURIComponent(want) : ""));
  source.onopen = () => { $("live").textContent = "live"; $("live").className = "live"; };
  source.onerror = () => { $("live").textContent = "reconnecting"; $("live").className = "live off"; };
  source.onmessage = (msg) => {
    const patch = JSON.parse(msg.data);
    for (const k of SECTIONS) {
      if (!patch[k]) continue;
      Object.assign(state[k], patch[k].set);
      for (const key of patch[k].del) delete state[k][key];
    }
    if (patch.meta) state.meta = patch.meta;
    if ("cell" in patch) state.cell = patch.cell;
    window.okraFrames += 1;
    window.okraLastFrame = { received: Date.now() / 1000, sent: patch.sent };
    render();
  };
}

// -- pieces ------------------------------------------------------------------------

// Beside the weights as AWS shows them: what the target groups served at the last traffic
// reading (spec.trafficConfirmation), the verdict and why.
function trafficLine(t, id) {
  if (!t) return "";
  const split = t.versions.map((v) => `${esc(v.version)} ${v.observed == null ? "-" : esc(v.observed)}`).join(" · ");
  const cls = { Confirmed: "Completed", Diverged: "Failed", Failed: "Failed" }[t.verdict] || "Paused";
  return `<div ${id === undefined ? `id="cell-traffic"` : ""} class="weights traffic" data-verdict="${esc(t.verdict)}">as traffic shows them: <span data-traffic="${split}">${split}</span> ${badge(t.verdict, cls)} <span class="muted">${esc(t.message)}</span></div>`;
}

function weightBar(weights, synced) {
  if (!weights || !weights.length) return `<span class="muted">-</span>`;
  const total = weights.reduce((a, w) => a + w.weight, 0) || 1;
  const spans = weights.map((w) =>
    `<span class="w-${esc(w.role)}" style="width:${(100 * w.weight) / total}%" title="${esc(w.version)} ${w.weight}"></span>`).join("");
  const text = weights.map((w) => `${esc(w.version)} ${w.weight}`).join(" · ");
  return `<div class="bar">${spans}</div><div class="weights ${synced ? "" : "unsynced"}" data-weights="${esc(text)}">${text}${synced ? "" : " (applying)"}</div>`;
}

function versions(row) {
  const stable = row.stable ? esc(row.stable) : "none";
  return row.canary ? `${stable} → <b>${esc(row.canary)}</b>` : stable;
}

function step(row) {
  return row.step ? `step ${row.step} of ${row.steps}` : (row.steps ? `${row.steps} steps` : "-");
}

function actions(kind, row, app) {
  if (state.meta.readOnly) return "";
  if (kind === "systems") return systemActions(row, app);
  const list = kind === "cells"
    ? [["promote", "Promote", "primary"], ["promote-full", "Promote fully", ""],
       [row.paused ? "resume" : "pause", row.paused ? "Resume" : "Pause", ""],
       ["abort", "Abort", "danger"], ["retry", "Retry", ""]]
    : [["promote", "Promote", "primary"], [row.paused ? "resume" : "pause", row.paused ? "Resume" : "Pause", ""],
       ["abort", "Abort", "danger"]];
  return buttons(list, row.actions, `data-kind="${kind}" data-ns="${esc(row.namespace)}" data-name="${esc(row.name)}"`);
}

// The buttons of `list` ([action, label, class]); `why` (action -> reason, from the server,
// as okra's CLI would refuse it) disables an action that would not act now, and says why
// beside it.
function buttons(list, why, attrs) {
  const no = (a) => (why || {})[a];
  const html = list.map(([a, label, cls]) =>
    `<button class="${cls}" ${attrs} data-action="${a}"${no(a) ? ` disabled title="${esc(no(a))}"` : ""}>${label}</button>`).join("");
  const reasons = list.filter(([a]) => no(a)).map(([a, label]) =>
    `<div class="why muted" data-why="${a}">${label}: ${esc(no(a))}</div>`).join("");
  return `<div class="actions">${html}${reasons}</div>`;
}

function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

function ago(iso) {
  if (!iso) return "";
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 90 ? `${s}s` : s < 5400 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`;
}

// The weights AWS showed over time: one step line per version, Events as ticks.
function weightChart(history, events) {
  const W = 640, H = 200, L = 36, R = 10, T = 10, B = 24;
  if (!history || !history.length) return `<p class="muted">No weights read from AWS yet.</p>`;
  const times = history.map((p) => Date.parse(p.time));
  const t0 = times[0], t1 = Math.max(Date.now(), times[times.length - 1] + 1000);
  const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const y = (w) => T + (1 - w / 100) * (H - T - B);
  const names = [];
  for (const p of history) for (const v of Object.keys(p.weights)) if (!names.includes(v)) names.push(v);
  const colors = ["var(--stable)", "var(--canary)", "#7b4fd0", "#19a0a0", "var(--other)"];
  const lines = names.map((v, i) => {
    let d = "";
    history.forEach((p, j) => {
      const w = p.weights[v] || 0;
      d += j === 0 ? `M${x(times[j])},${y(w)}` : `H${x(times[j])}V${y(w)}`;
    });
    d += `H${x(t1)}`;
    return `<path d="${d}" fill="none" stroke="${colors[i % colors.length]}" stroke-width="2"/>`;
  }).join("");
  const grid = [0, 50, 100].map((w) =>
    `<line x1="${L}" x2="${W - R}" y1="${y(w)}" y2="${y(w)}" stroke="#e3e6ec"/><text x="4" y="${y(w) + 4}">${w}%</text>`).join("");
  const ticks = (events || []).filter((e) => e.time && Date.parse(e.time) >= t0).map((e) =>
    `<line x1="${x(Date.parse(e.time))}" x2="${x(Date.parse(e.time))}" y1="${H - B}" y2="${H - B + 6}" stroke="${e.type === "Warning" ? "var(--bad)" : "var(--muted)"}"><title>${esc(e.reason)}: ${esc(e.note)}</title></line>`).join("");
  const axis = `<text x="${L}" y="${H - 4}">${new Date(t0).toLocaleTimeString()}</text><text x="${W - R - 60}" y="${H - 4}">${new Date(t1).toLocaleTimeString()}</text>`;
  const legend = names.map((v, i) => `<span><i style="background:${colors[i % colors.length]}"></i>${esc(v)}</span>`).join("");
  return `<svg id="weights-chart" viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="weights over time">${grid}${lines}${ticks}${axis}</svg><div class="legend">${legend}</div>`;
}

// One metric's measurements as dots (green success, red failure, amber otherwise).
function measurementChart(metric) {
  const values = metric.measurements.map((m) => parseFloat(m.value)).filter((v) => !isNaN(v));
  if (!values.length) return "";
  const W = 260, H = 60, P = 6;
  const lo = Math.min(0, ...values), top = Math.max(...values), hi = top > lo ? top : lo + 1;
  const label = (v) => Number(v.toPrecision(3));
  const pts = metric.measurements.map((m, i) => {
    const v = parseFloat(m.value);
    if (isNaN(v)) return "";
    const cx = P + (i / Math.max(1, metric.measurements.length - 1)) * (W - 2 * P);
    const cy = H - P - ((v - lo) / (hi - lo)) * (H - 2 * P);
    const color = m.phase === "Successful" ? "var(--ok)" : m.phase === "Failed" ? "var(--bad)" : "var(--warn)";
    return `<circle cx="${cx}" cy="${cy}" r="3" fill="${color}"><title>${esc(m.value)} (${esc(m.phase)})</title></circle>`;
  }).join("");
  return `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}">${pts}<text x="2" y="10">${label(hi)}</text><text x="2" y="${H - 2}">${label(lo)}</text></svg>`;
}

// -- system Cells ------------------------------------------------------------------

// A system's buttons (app undefined: the whole system, as `okra promote SYSTEM`) or one
// application's (as `okra promote SYSTEM --application NAME`).
function systemActions(s, app) {
  const paused = app ? !!(app.child && app.child.paused) : s.paused;
  const list = [["promote", "Promote", "primary"], [paused ? "resume" : "pause", paused ? "Resume" : "Pause", ""],
    ["abort", "Abort", "danger"], ["retry", "Retry", ""]];
  const scope = app ? ` data-application="${esc(app.name)}"` : "";
  return buttons(list, (app || s).actions, `data-kind="cells" data-system="1" data-ns="${esc(s.namespace)}" data-name="${esc(s.name)}"${scope}`);
}

function systemCluster(c) {
  const state = c.ready ? badge("ready", "Completed")
    : `${badge("waiting", "Paused")}${c.since ? ` <span class="muted">for <span data-since="${esc(c.since)}">${ago(c.since)}</span></span>` : ""}`;
  return `<div class="cluster" data-cluster="${esc(c.name)}" data-ready="${c.ready}">${state} <b>${esc(c.name)}</b>${c.eks && c.eks !== c.name ? ` <span class="muted">EKS ${esc(c.eks)}</span>` : ""}${c.message ? ` <span class="muted">${esc(c.message)}</span>` : ""}</div>`;
}

// Where an application comes from and goes to: each version with its clusters and the
// weight AWS shows for each cluster's target group.
function appVersions(a) {
  const on = (version) => a.clusterWeights.filter((w) => w.version === version)
    .map((w) => `${esc(w.cluster)}${w.weight === null || w.weight === undefined ? "" : ` ${w.weight}`}`).join(", ") || "no cluster";
  if (!a.version) return `<span class="muted">no cluster set yet</span>`;
  if (!a.servingVersion || a.servingVersion === a.version) return `<b>${esc(a.version)}</b> serving: ${on(a.version)}`;
  return `${esc(a.servingVersion)} serving: ${on(a.servingVersion)} → <b>${esc(a.version)}</b>: ${on(a.version)}`;
}

function appCheck(c) {
  const last = c.passed === true ? badge("✓ passed", "Completed") : c.passed === false ? badge("✗ failed", "Failed") : `<span class="muted">not run yet</span>`;
  const value = c.value === null || c.value === undefined ? "" : ` ${esc(c.value)}`;
  return `<div class="check" data-check="${esc(c.name)}">check <b>${esc(c.check)}</b>${c.cluster ? ` on ${esc(c.cluster)}` : ""}: ${last}${value}${c.lastRun ? ` <span class="muted"><span data-since="${esc(c.lastRun)}">${ago(c.lastRun)}</span> ago</span>` : ""}${c.failed ? ` <span class="muted">${c.failed} failed in a row</span>` : ""}${c.message ? ` <span class="muted">${esc(c.message)}</span>` : ""}</div>`;
}

function appBlock(s, a) {
  const c = a.child;
  const link = a.cell ? `<a href="#/cell/${encodeURIComponent(s.namespace)}/${encodeURIComponent(a.cell)}">${esc(a.name)}</a>` : esc(a.name);
  const cellState = c ? ` <span class="muted">Cell ${esc(a.cell)}:</span> ${badge(c.phase)}${c.paused ? " " + badge("paused") : ""}${c.aborted ? " " + badge("aborted") : ""} <span class="muted">${step(c)}</span>` : ` <span class="muted">no Cell yet</span>`;
  return `<div class="application" data-application="${esc(a.name)}" data-phase="${esc(a.phase)}">
    <div><b>${link}</b> ${badge(a.phase)}${cellState}</div>
    <div class="versions">${appVersions(a)}</div>
    <div class="weights-cell">${c ? weightBar(c.weights, c.synced) : `<span class="muted">-</span>`}</div>
    ${c ? trafficLine(c.traffic, "") : ""}
    ${a.checks.map(appCheck).join("")}
    ${a.rollbackAt ? `<div class="muted">rollback ${countdown(a.rollbackAt, "in {s}s")}</div>` : ""}
    ${a.message ? `<div class="muted">${esc(a.message)}</div>` : ""}
    ${actions("systems", s, a)}</div>`;
}

// A system Cell: its clusters, then each application with its Cell's rollout.
function systemCard(s) {
  return `<div class="card system" data-key="${esc(s.key)}" data-phase="${esc(s.phase)}" data-paused="${s.paused}">
    <div><b>${esc(s.name)}</b> <span class="muted">${esc(s.namespace)} · system of ${plural(s.clusters.length, "cluster", "clusters")}, ${plural(s.applications.length, "application", "applications")}</span>
    ${badge(s.phase)} ${s.health ? badge(s.health) : ""}${s.paused ? " " + badge("paused") : ""}</div>
    ${s.message ? `<p class="muted">${esc(s.message)}</p>` : ""}
    ${actions("systems", s)}
    <div class="system-grid"><div><h3>Clusters</h3>${s.clusters.map(systemCluster).join("") || `<div class="muted">not looked at yet</div>`}</div>
    <div><h3>Applications</h3>${s.applications.map((a) => appBlock(s, a)).join("")}</div></div></div>`;
}

// -- pages -------------------------------------------------------------------------

function cellsPage() {
  const words = (r) => r.system
    ? `${r.namespace}/${r.name} ${r.phase} ${r.applications.map((a) => `${a.name} ${a.phase} ${a.version} ${a.servingVersion}`).join(" ")}`
    : `${r.namespace}/${r.name} ${r.phase} ${r.stable} ${r.canary}`;
  const all = Object.values(state.cells)
    .filter((r) => !filterText || words(r).toLowerCase().includes(filterText))
    .sort((a, b) => a.key.localeCompare(b.key));
  const cards = all.filter((r) => r.system).map(systemCard).join("");
  const rows = all.filter((r) => !r.system);
  const body = rows.map((r) => `<tr data-key="${esc(r.key)}">
    <td><a href="#/cell/${encodeURIComponent(r.namespace)}/${encodeURIComponent(r.name)}">${esc(r.name)}</a><div class="muted">${esc(r.namespace)}</div></td>
    <td>${badge(r.phase)} ${r.health ? badge(r.health) : ""}${r.aborted ? " " + badge("aborted") : ""}</td>
    <td>${versions(r)}</td><td>${step(r)}</td>
    <td class="weights-cell">${weightBar(r.weights, r.synced)}</td>
    <td>${r.analysis === "-" ? "-" : badge(r.analysis)}</td>
    <td class="muted">${esc(r.message)}</td></tr>`).join("");
  const total = Object.keys(state.cells).length;
  // The head never changes while the list is shown, so the filter box keeps its focus.
  return { key: "cells", head: `<h1>Cells</h1>
    <input id="filter" class="filter" placeholder="filter by name, namespace, phase, version">`,
  body: `<p class="muted">${all.length} of ${total}</p>${cards}${cards && !rows.length ? "" : `<table id="cells"><thead><tr><th>CELL</th><th>PHASE</th><th>STABLE → CANARY</th><th>STEP</th><th>WEIGHTS (AWS)</th><th>ANALYSIS</th><th>MESSAGE</th></tr></thead>
    <tbody>${body || `<tr><td colspan="7" class="muted">${state.meta.synced ? "No Cells." : "Reading…"}</td></tr>`}</tbody></table>`}` };
}

function cellPage(r) {
  const c = state.cell;
  if (!c) return { key: "cell", head: "", body: `<p class="muted">${state.meta.synced ? `Cell ${esc(r.ns)}/${esc(r.name)} not found.` : "Reading…"}</p>` };
  if (r.rollout) return rolloutPage(c, r.rollout);
  const timeline = c.timeline.map((s) =>
    `<li class="${s.state}">${s.index + 1}. ${esc(s.text)}${s.note ? ` <span class="muted" ${s.until ? `data-until="${esc(s.until)}"` : ""}>${esc(s.note)}</span>` : ""}</li>`).join("");
  const runs = c.runs.map((run) => `<div class="card run"><b>${esc(run.name)}</b> ${badge(run.phase)} <span class="muted">${esc(run.role)} ${esc(run.message)}</span>
    ${run.metrics.map((m) => `<div><span>${esc(m.name)}</span> ${badge(m.phase)} <span class="muted">${m.successCondition ? "success: " + esc(m.successCondition) : ""} ${m.failureCondition ? "failure: " + esc(m.failureCondition) : ""}</span>
    <div>${measurementChart(m)} <span class="muted">${m.measurements.slice(-5).map((x) => esc(x.value)).join(", ")}</span></div></div>`).join("")}</div>`).join("") || `<p class="muted">None.</p>`;
  const blocked = c.blocklist.map((b) => `<tr><td>${badge(b.version, "Failed")}</td><td>${esc(b.cause)}</td><td class="muted">${ago(b.time)}</td></tr>`).join("");
  const conds = c.conditions.map((k) => `<tr><td>${esc(k.type)}</td><td>${esc(k.status)}</td><td>${esc(k.reason)}</td><td class="muted">${esc(k.message)}</td></tr>`).join("");
  const events = c.events.map((e) => `<tr><td class="muted">${ago(e.time)}</td><td>${e.type === "Warning" ? badge("Warning", "Failed") : ""} ${esc(e.reason)}</td><td>${esc(e.note)}${e.count > 1 ? ` <span class="muted">×${e.count}</span>` : ""}</td></tr>`).join("");
  return { key: "cell", head: `<h1><a href="#/cells" class="muted">Cells</a> / ${esc(c.namespace)}/${esc(c.name)}</h1>`, body: `
    <div class="card" id="cell-summary">${badge(c.phase)} ${c.health ? badge(c.health) : ""}${c.aborted ? " " + badge("aborted") : ""}
      <span>${versions(c)}</span> · <span id="cell-step">${step(c)}</span> ${c.rolloutId ? `<span class="muted">rollout ${esc(c.rolloutId)}</span>` : ""}
      ${c.pinned ? `<span class="muted">pinned to ${esc(c.pinned)}</span>` : ""}
      <p class="muted">${esc(c.message)}</p>
      <div id="cell-weights">${weightBar(c.weights, c.synced)}</div>
      ${trafficLine(c.traffic)}
      ${actions("cells", c)}</div>
    <div class="grid"><div class="card"><h2>Steps</h2><ol class="steps" id="timeline">${timeline || "<li>none: a new version gets all traffic at once</li>"}</ol></div>
    <div class="card"><h2>Weights over time (as AWS showed them)</h2>${weightChart(c.history, c.events)}</div></div>
    <h2>Analysis runs</h2>${runs}
    <h2>Past rollouts</h2>${pastRollouts(c)}
    <h2>Blocked versions</h2>${blocked ? `<table>${blocked}</table>` : `<p class="muted">None.</p>`}
    <h2>Conditions</h2>${conds ? `<table><tr><th>TYPE</th><th>STATUS</th><th>REASON</th><th>MESSAGE</th></tr>${conds}</table>` : `<p class="muted">None.</p>`}
    <h2>Events</h2>${events ? `<table id="events">${events}</table>` : `<p class="muted">None${state.meta.unreadable && state.meta.unreadable.Event ? " (Events cannot be read)" : ""}.</p>`}` };
}

// -- the rollout record (status.history) ------------------------------------------------

const num = (v) => (v === null || v === undefined ? "" : Number(Number(v).toPrecision(3)));
const when = (iso) => (iso ? new Date(iso).toLocaleString() : "");
const outcome = (rec) => badge(rec.outcome || "InProgress", rec.outcome || "Progressing");
const cellHref = (c) => `#/cell/${encodeURIComponent(c.namespace)}/${encodeURIComponent(c.name)}`;

function took(seconds) {
  if (seconds === null || seconds === undefined) return "";
  const s = Math.round(seconds), m = Math.floor(s / 60);
  return s < 60 ? `${s}s` : m < 60 ? `${m}m${s % 60 ? (s % 60) + "s" : ""}` : `${Math.floor(m / 60)}h${m % 60 ? (m % 60) + "m" : ""}`;
}

// The Cell's past rollouts, newest first, each a link to its own page.
function pastRollouts(c) {
  const rows = (c.rollouts || []).map((r) => `<tr><td><a href="${cellHref(c)}/${encodeURIComponent(r.rolloutId)}">${esc(r.rolloutId)}</a></td>
    <td>${esc(r.from || "none")} → ${esc(r.to)}</td><td>${esc(r.trigger)}</td><td class="muted">${esc(when(r.startedAt))}</td>
    <td>${r.endedAt ? took(r.took) : `<span class="muted">in progress</span>`}</td><td>${outcome(r)}</td><td class="muted">${esc(r.cause || "")}</td></tr>`).join("");
  return rows ? `<table id="past-rollouts"><tr><th>ROLLOUT</th><th>FROM → TO</th><th>TRIGGER</th><th>STARTED</th><th>TOOK</th><th>OUTCOME</th><th>CAUSE</th></tr>${rows}</table>`
    : `<p class="muted">No rollout on record yet.</p>`;
}

const USER_ACTIONS = ["Promoted", "PausedByUser", "Resumed"];
// ` by USER` beside a user action the record credits (`unknown` where the API server could
// not vouch for one); nothing for what okra did itself.
const byUser = (user) => (user ? ` by ${user}` : "");
const PHASE_COLOR = { Successful: "var(--ok)", Failed: "var(--bad)", Error: "var(--bad)" };

// One rollout on one time axis: the canary's weight step by step (each step's weight when
// it ended; the current step's as the status has it now), step starts, what okra said
// (ticks; red: warnings) and what users did (blue), each analysis where it finished, the
// times a freeze held it (shaded), and below, one lane per metric with its measurements.
function rolloutChart(rec, liveWeight) {
  const W = 720, L = 40, R = 10, T = 16, WH = 150, LANE = 36;
  const t0 = Date.parse(rec.startedAt);
  const t1 = Math.max(rec.endedAt ? Date.parse(rec.endedAt) : Date.now(), t0 + 1000);
  const r1 = (v) => Math.round(v * 10) / 10;
  const x = (t) => r1(L + ((Date.parse(t) - t0) / (t1 - t0)) * (W - L - R));
  const y = (w) => r1(T + (1 - w / 100) * (WH - T));
  let d = "", drawn = false;
  const starts = [];
  for (const s of rec.steps || []) {
    const w = s.canaryWeight ?? (s.endedAt ? null : liveWeight ?? null);
    starts.push(`<line class="step-start" x1="${x(s.startedAt)}" x2="${x(s.startedAt)}" y1="${T}" y2="${WH}" stroke="#e3e6ec" stroke-dasharray="3 3"/><text x="${x(s.startedAt) + 2}" y="${T - 4}">${s.index + 1}</text>`);
    if (w === null) { drawn = false; continue; }
    const end = s.endedAt ? x(s.endedAt) : W - R;
    d += drawn ? `H${x(s.startedAt)}V${y(w)}H${end}` : `M${x(s.startedAt)},${y(w)}H${end}`;
    drawn = true;
  }
  const grid = [0, 50, 100].map((w) => `<line x1="${L}" x2="${W - R}" y1="${y(w)}" y2="${y(w)}" stroke="#e3e6ec"/><text x="4" y="${y(w) + 4}">${w}%</text>`).join("");
  const ticks = (rec.events || []).map((e) => {
    const color = e.type === "Warning" ? "var(--bad)" : USER_ACTIONS.includes(e.reason) ? "var(--stable)" : "var(--muted)";
    return `<line class="tick" data-reason="${esc(e.reason)}" x1="${x(e.time)}" x2="${x(e.time)}" y1="${WH + 2}" y2="${WH + 12}" stroke="${color}" stroke-width="2"><title>${esc(when(e.time))} ${esc(e.reason + byUser(e.user))}: ${esc(e.message)}</title></line>`;
  }).join("");
  const frozen = (rec.freezes || []).map((f) => {
    const a = x(f.startedAt), b = f.endedAt ? x(f.endedAt) : W - R;
    return `<rect class="frozen" x="${a}" y="${T}" width="${Math.max(1, r1(b - a))}" height="${WH - T}" fill="#dfe9fb" fill-opacity="0.7"><title>${esc(when(f.startedAt))}: ${esc(f.message)}${f.endedAt ? ` (until ${esc(when(f.endedAt))})` : ""}</title></rect>`;
  }).join("");
  const analyses = rec.analyses || [];
  const marks = analyses.filter((a) => a.completedAt || a.startedAt).map((a) => {
    const cx = x(a.completedAt || a.startedAt);
    return `<path class="analysis-mark" d="M${cx},${WH - 14}l6,6l-6,6l-6,-6z" fill="${PHASE_COLOR[a.phase] || "var(--warn)"}"><title>${esc(a.name)} (${esc(a.at)}) ${esc(a.phase)}${a.message ? ": " + esc(a.message) : ""}</title></path>`;
  }).join("");
  const lanes = [];
  for (const a of analyses) for (const m of a.metrics || []) {
    const pts = (m.measurements || []).filter((p) => p.time && !isNaN(parseFloat(p.value)));
    if (pts.length) lanes.push({ label: `${m.name} (${a.at})`, pts });
  }
  const top = WH + 24;
  const laneSvg = lanes.map((lane, i) => {
    const vs = lane.pts.map((p) => parseFloat(p.value));
    const lo = Math.min(...vs), most = Math.max(...vs), hi = most > lo ? most : lo + 1;
    const y0 = top + i * LANE;
    const dots = lane.pts.map((p) => `<circle cx="${x(p.time)}" cy="${y0 + LANE - 6 - ((parseFloat(p.value) - lo) / (hi - lo)) * (LANE - 16)}" r="3" fill="${PHASE_COLOR[p.phase] || "var(--warn)"}"><title>${esc(when(p.time))} ${esc(p.value)} (${esc(p.phase)})</title></circle>`).join("");
    return `<g class="lane"><line x1="${L}" x2="${W - R}" y1="${y0}" y2="${y0}" stroke="#eceff4"/><text x="${L}" y="${y0 + 10}">${esc(lane.label)} ${most > lo ? `${num(lo)}–${num(most)}` : num(lo)}</text>${dots}</g>`;
  }).join("");
  const H = top + lanes.length * LANE + 16;
  const axis = `<text x="${L}" y="${H - 4}">${esc(new Date(t0).toLocaleTimeString())}</text><text x="${W - R - 60}" y="${H - 4}">${esc(new Date(t1).toLocaleTimeString())}</text>`;
  return `<svg id="rollout-chart" viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="the rollout over time">${frozen}${grid}${starts.join("")}<path class="canary-weight" d="${d}" fill="none" stroke="var(--canary)" stroke-width="2"/>${marks}${ticks}${laneSvg}${axis}</svg>
    <div class="legend"><span><i style="background:var(--canary)"></i>canary weight</span><span><i style="background:var(--stable)"></i>user action</span><span><i style="background:var(--bad)"></i>warning</span><span>◆ analysis</span><span><i style="background:#dfe9fb"></i>held by a freeze</span></div>`;
}

// A judged metric's two samples on one scale (whiskers: min to max, box: the quartiles,
// the thick line: the median, the short tick: p90).
function boxPlot(j) {
  const sides = [["baseline", j.baseline || {}, "var(--stable)"], ["canary", j.canary || {}, "var(--canary)"]];
  const vals = sides.flatMap(([, s]) => [s.min, s.max, s.median, s.p90].filter((v) => v !== null && v !== undefined));
  if (!vals.length) return `<span class="muted">no data on either side</span>`;
  const W = 320, H = 62, L = 78, R = 8;
  const lo = Math.min(...vals), hi = Math.max(...vals) > lo ? Math.max(...vals) : lo + 1;
  const x = (v) => L + ((v - lo) / (hi - lo)) * (W - L - R);
  const rows = sides.map(([name, s, color], i) => {
    const yc = 14 + i * 24;
    if (!s.count || s.median === null || s.median === undefined) return `<text x="2" y="${yc + 4}">${name}: no data</text>`;
    const mn = s.min ?? s.median, mx = s.max ?? s.median, q1 = s.p25 ?? s.median, q3 = s.p75 ?? s.median;
    return `<g class="box" data-side="${name}"><title>${name}: ${s.count} values, median ${num(s.median)}, quartiles ${num(q1)}–${num(q3)}, p90 ${num(s.p90)}, range ${num(mn)}–${num(mx)}</title>
      <text x="2" y="${yc + 4}">${name} (${s.count})</text>
      <line x1="${x(mn)}" x2="${x(mx)}" y1="${yc}" y2="${yc}" stroke="${color}"/>
      <rect x="${x(q1)}" y="${yc - 7}" width="${Math.max(1, x(q3) - x(q1))}" height="14" fill="${color}" fill-opacity="0.25" stroke="${color}"/>
      <line x1="${x(s.median)}" x2="${x(s.median)}" y1="${yc - 7}" y2="${yc + 7}" stroke="${color}" stroke-width="3"/>
      ${s.p90 !== null && s.p90 !== undefined ? `<line x1="${x(s.p90)}" x2="${x(s.p90)}" y1="${yc - 4}" y2="${yc + 4}" stroke="${color}"/>` : ""}</g>`;
  }).join("");
  return `<svg class="boxplot" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}">${rows}<text x="${L}" y="${H - 2}">${num(lo)}</text><text x="${W - R - 36}" y="${H - 2}">${num(hi)}</text></svg>`;
}

const VERDICT = { Pass: "Successful", Marginal: "Inconclusive", Fail: "Failed", NoData: "Pending", High: "Failed", Low: "Failed" };

// A judged analysis's canary report: the score against its thresholds, then per metric the
// classification, the effect size, the p-value, Kayenta's ratio and both samples.
function canaryReport(a) {
  const judged = (a.metrics || []).filter((m) => m.judgment);
  if (!judged.length) return "";
  const j = a.judgment;
  const score = j && j.score !== null && j.score !== undefined ? `<div class="score">score <b>${num(j.score)}</b> ${badge(j.outcome, VERDICT[j.outcome])}
    <span class="muted">passes at ${num(j.pass)}, marginal from ${num(j.marginal)}${j.message ? " · " + esc(j.message) : ""}</span></div>` : "";
  const rows = judged.map((m) => {
    const k = m.judgment;
    return `<tr data-metric="${esc(m.name)}"><td>${esc(m.name)}${k.critical ? ` <span class="muted">critical</span>` : ""}</td><td>${badge(k.classification, VERDICT[k.classification])}</td>
      <td>${k.effectSize !== null && k.effectSize !== undefined ? `${k.effectSize >= 0 ? "+" : ""}${num(k.effectSize * 100)}%` : ""}</td>
      <td>${k.pValue !== null && k.pValue !== undefined ? Number(Number(k.pValue).toPrecision(2)) : ""}</td><td>${num(k.ratio)}</td>
      <td>${boxPlot(k)}</td><td class="muted">${esc(k.message || "")}</td></tr>`;
  }).join("");
  return `<div class="report">${score}<table class="canary-report"><tr><th>METRIC</th><th>VERDICT</th><th>EFFECT</th><th>P</th><th>RATIO</th><th>BASELINE VS CANARY</th><th></th></tr>${rows}</table></div>`;
}

// One past (or the current) rollout: what it did and why, on its time axis.
function rolloutPage(c, id) {
  const rec = (c.rollouts || []).find((r) => r.rolloutId === id);
  const head = `<h1><a href="#/cells" class="muted">Cells</a> / <a href="${cellHref(c)}" class="muted">${esc(c.namespace)}/${esc(c.name)}</a> / rollout ${esc(id)}</h1>`;
  if (!rec) {
    const known = (c.rollouts || []).map((r) => r.rolloutId).join(", ") || "none";
    return { key: "rollout", head, body: `<p class="muted">No rollout ${esc(id)} on record (on record: ${esc(known)}).</p>` };
  }
  const live = !rec.endedAt && c.rolloutId === rec.rolloutId ? c.canaryWeight : null;
  const analyses = (rec.analyses || []).map((a) => `<div class="card run" data-analysis="${esc(a.name)}"><b>${esc(a.name)}</b> ${badge(a.phase)}
    <span class="muted">${esc(a.at)} · ${esc(when(a.completedAt || a.startedAt))} ${esc(a.message || "")}</span>
    ${(a.metrics || []).map((m) => `<div>${esc(m.name)} ${badge(m.phase)}${m.dryRun ? ` <span class="muted">dry run</span>` : ""}
      <span class="muted">${m.count || 0} measured, ${m.successful || 0} successful, ${m.failed || 0} failed${(m.measurements || []).length ? "; last " + m.measurements.map((p) => esc(p.value)).join(", ") : ""}</span></div>`).join("")}
    ${canaryReport(a)}</div>`).join("") || `<p class="muted">No analysis finished in this rollout.</p>`;
  const said = (rec.events || []).map((e) => `<tr><td class="muted">${esc(when(e.time))}</td><td>${e.type === "Warning" ? badge("Warning", "Failed") : ""} ${esc(e.reason)}${e.user ? ` <span class="actor">by ${esc(e.user)}</span>` : ""}</td><td>${esc(e.message)}</td></tr>`).join("");
  const traffic = (t) => (t ? `${badge(t.verdict, t.verdict === "Confirmed" ? "Successful" : t.verdict === "Waiting" ? "Pending" : "Failed")} ${t.versions.map((v) => `${esc(v.version)} ${v.observed ?? "–"}% <span class="muted">(planned ${v.planned}%)</span>`).join(", ")} <span class="muted">of ${t.requests} requests</span>` : "");
  const steps = (rec.steps || []).map((s) => `<tr><td>${s.index + 1}</td><td class="muted">${esc(when(s.startedAt))}</td><td class="muted">${s.endedAt ? esc(when(s.endedAt)) : "current"}</td><td>${s.canaryWeight ?? ""}${s.canaryWeight !== null && s.canaryWeight !== undefined ? "%" : ""}</td><td class="step-traffic">${traffic(s.traffic)}</td></tr>`).join("");
  return { key: "rollout", head, body: `
    <div class="card" id="rollout-summary">${outcome(rec)} <span>${esc(rec.from || "none")} → ${esc(rec.to)}</span> · ${esc(rec.trigger + byUser(rec.startedBy))} · started ${esc(when(rec.startedAt))}${rec.endedAt ? `, took ${took(rec.took)}` : ", in progress"}
      ${rec.cause ? `<p id="rollout-cause">${esc(rec.cause)}</p>` : ""}</div>
    <div class="card"><h2>Timeline</h2>${rolloutChart(rec, live)}</div>
    <h2>Analyses</h2>${analyses}
    <div class="grid"><div class="card"><h2>Steps</h2><table id="rollout-steps"><tr><th>STEP</th><th>BEGAN</th><th>ENDED</th><th>CANARY</th><th>TRAFFIC</th></tr>${steps}</table></div>
    <div class="card"><h2>What okra said and saw</h2>${said ? `<table id="rollout-events">${said}</table>` : `<p class="muted">Nothing.</p>`}</div></div>` };
}

// A time left that counts down in the page (see the timer at the end), in `format`.
function countdown(iso, format) {
  const left = Math.max(0, Math.round((Date.parse(iso) - Date.now()) / 1000));
  return `<span class="muted" data-until="${esc(iso)}" data-format="${esc(format)}">${esc(format.replace("{s}", left))}</span>`;
}

const short = (rev) => esc((rev || "").slice(0, 8));

function clusterLine(k) {
  const extra = [];
  if (k.bakeUntil) extra.push(countdown(k.bakeUntil, "bake {s}s left"));
  if (k.message) extra.push(esc(k.message));
  if (k.nextAttempt) extra.push(countdown(k.nextAttempt, "next try in {s}s"));
  return `<div class="cluster" data-cluster="${esc(k.name)}" data-phase="${esc(k.phase)}">${badge(k.phase)} <b>${esc(k.name)}</b>${extra.length ? ` <span class="muted">${extra.join(" · ")}</span>` : ""}</div>`;
}

function webhookLine(w) {
  const state = !w.called ? `<span class="muted">not called yet</span>`
    : w.succeeded ? badge(`✓ ${w.statusCode || ""}`.trim(), "Completed") : badge(`✗ ${w.statusCode || ""}`.trim(), "Failed");
  return `<div class="cluster">webhook <b>${esc(w.name)}</b> <span class="muted">${esc(w.type)}</span> ${state}${w.message ? ` <span class="muted">${esc(w.message)}</span>` : ""}</div>`;
}

// One stage: its phase, its gates, its analysis and webhooks, its clusters.
function stageCard(s, i, r) {
  const current = i === r.currentStage && !["Completed", "RolledBack"].includes(r.phase);
  const analysis = s.analysisTemplates.length
    ? `<div class="gate">analysis ${s.analysisTemplates.map(esc).join(", ")}${s.analysisRun ? ` → ${esc(s.analysisRun)}` : ""} ${s.analysis ? badge(s.analysis) : ""}</div>` : "";
  const clusters = s.clusters.map(clusterLine).join("") ||
    `<div class="muted cluster">${i > 0 && s.phase === "Pending" ? "waiting for the stages before it" : "no clusters picked yet"}</div>`;
  return `<div class="card stage ${current ? "current" : ""}" data-stage="${esc(s.name)}" data-phase="${esc(s.phase)}">
    <div><b>${i + 1}. ${esc(s.name)}</b> ${badge(s.phase)} ${s.clusters.length ? `<span class="muted">${s.done} of ${s.clusters.length} done</span>` : ""}</div>
    ${s.message ? `<div class="muted">${esc(s.message)}</div>` : ""}
    <ul class="gates">${s.gates.map((g) => `<li>${esc(g)}</li>`).join("")}</ul>${analysis}
    ${clusters}${s.webhooks.map(webhookLine).join("")}</div>`;
}

// A ProgressiveRollout's record: each revision it rolled out, newest first.
function pastRevisions(r) {
  if (!(r.history || []).length) return "";
  const rows = r.history.map((h) => `<tr><td>${short(h.revision)}</td><td class="muted">${esc(when(h.startedAt))}</td>
    <td>${h.endedAt ? took((Date.parse(h.endedAt) - Date.parse(h.startedAt)) / 1000) : `<span class="muted">in progress</span>`}</td>
    <td>${badge(h.outcome || "InProgress", h.outcome || "Progressing")}</td><td>${h.done}/${h.stages}</td><td class="muted">${esc(h.message)}</td></tr>`).join("");
  return `<details class="past-revisions"><summary>Past revisions (${r.history.length})</summary><table><tr><th>REVISION</th><th>STARTED</th><th>TOOK</th><th>OUTCOME</th><th>STAGES DONE</th><th>MESSAGE</th></tr>${rows}</table></details>`;
}

function rolloutsPage() {
  const rows = Object.values(state.rollouts).sort((a, b) => a.key.localeCompare(b.key));
  const body = rows.map((r) => `<div class="card rollout" data-key="${esc(r.key)}" data-phase="${esc(r.phase)}" data-revision="${esc(r.revision)}">
    <b>${esc(r.namespace)}/${esc(r.name)}</b> ${badge(r.phase)} ${r.paused ? badge("paused") : ""} ${r.aborted ? badge("aborted") : ""}
    <span class="muted">ApplicationSet ${esc(r.source)} · revision ${short(r.revision)}${r.failedRevision ? ` (failed: ${short(r.failedRevision)})` : ""} · on failure: ${esc(r.failurePolicy)}</span>
    ${r.message ? `<p class="muted">${esc(r.message)}</p>` : ""}${r.stalled ? `<p class="notice error">Stalled: ${esc(r.stalled)}</p>` : ""}
    ${actions("rollouts", r)}
    <div class="stages">${r.stages.map((s, i) => stageCard(s, i, r)).join("")}</div>
    ${r.unmanaged.length ? `<p class="muted">In no stage: ${r.unmanaged.map(esc).join(", ")}</p>` : ""}
    ${pastRevisions(r)}</div>`).join("");
  return { key: "rollouts", head: "<h1>ProgressiveRollouts</h1>", body: body || `<p class="muted">${state.meta.synced ? "No ProgressiveRollouts." : "Reading…"}</p>` };
}

function inventoryPage() {
  const sets = Object.values(state.clustersets).sort((a, b) => a.key.localeCompare(b.key)).map((s) =>
    `<tr><td>${esc(s.namespace)}/${esc(s.name)}</td><td>${s.clusters.map(esc).join(", ") || "-"}</td><td class="muted">${s.errors.map(esc).join("; ")}</td></tr>`).join("");
  const byVersion = {};
  for (const t of Object.values(state.targetgroups)) (byVersion[t.version || "(no version)"] ||= []).push(t);
  const tgs = Object.keys(byVersion).sort().map((v) => `<tr><td>${badge(v, "")}</td><td>${byVersion[v].sort((a, b) => a.key.localeCompare(b.key)).map((t) =>
    `<div>${esc(t.namespace)}/${esc(t.name)} <span class="muted">${esc(t.arn)}</span></div>`).join("")}</td></tr>`).join("");
  return { key: "inventory", head: "<h1>Inventory</h1>", body: `<h2>ClusterSets</h2>${sets ? `<table><tr><th>CLUSTERSET</th><th>CLUSTERS</th><th>ERRORS</th></tr>${sets}</table>` : `<p class="muted">None.</p>`}
    <h2>AWSTargetGroups by version</h2>${tgs ? `<table id="targetgroups"><tr><th>VERSION</th><th>TARGET GROUPS</th></tr>${tgs}</table>` : `<p class="muted">None.</p>`}` };
}

let shownHead = null;
function render() {
  const r = route();
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.page === r.page || (r.page === "cell" && a.dataset.page === "cells")));
  const page = r.page === "cell" ? cellPage(r) : r.page === "rollouts" ? rolloutsPage() : r.page === "inventory" ? inventoryPage() : cellsPage();
  const main = $("main");
  // Keep the head (and the filter box with its focus) when only the body changed.
  if (shownHead !== page.key + page.head || !$("page-body")) {
    main.innerHTML = `<div id="page-head">${page.head}</div><div id="page-body"></div>`;
    shownHead = page.key + page.head;
    const f = $("filter");
    if (f) {
      f.value = filterText;
      f.addEventListener("input", () => { filterText = f.value.toLowerCase(); render(); });
    }
  }
  $("page-body").innerHTML = page.body;
  const unreadable = Object.entries(state.meta.unreadable || {});
  $("unreadable").hidden = !unreadable.length;
  $("unreadable").textContent = unreadable.map(([k, why]) => `Cannot read ${k}: ${why}`).join(" · ");
  freezeBanner();
}

// The Freezes that apply now, each with its reason, author and end, and a Lift button.
function freezeBanner() {
  const active = Object.values(state.freezes).filter((f) => f.active !== "no")
    .sort((a, b) => a.key.localeCompare(b.key));
  $("freezes").hidden = !active.length;
  $("freezes").innerHTML = active.map((f) => {
    const by = f.author ? `, by ${esc(f.author)}` : "";
    const until = f.active === "invalid" ? `invalid (${esc(f.problem)}): holds until fixed` : `until ${esc(f.until)}`;
    const cluster = f.kind === "ClusterFreeze";
    const lift = state.meta.readOnly ? "" :
      `<button data-kind="${cluster ? "clusterfreezes" : "freezes"}" data-ns="${cluster ? "*" : esc(f.namespace)}" data-name="${esc(f.name)}" data-action="lift">Lift</button>`;
    const what = cluster ? `clusterfreeze ${esc(f.name)}` : `${esc(f.namespace)}/${esc(f.name)}`;
    const where = cluster ? `; namespaces ${f.namespaces === "all" ? "all" : esc(f.namespaces)}` : "";
    return `<div class="freeze" data-key="${esc(f.key)}">Frozen: <b>${what}</b> (${esc(f.reason)}${by}) ${until}${where}; selects ${esc(f.selector)}${lift}</div>`;
  }).join("");
}

// -- actions -----------------------------------------------------------------------

function notice(text, error) {
  const n = $("notice");
  n.hidden = false;
  n.className = "notice" + (error ? " error" : "");
  n.textContent = text;
}

function confirmThen(text, then) {
  $("confirm-text").textContent = text;
  $("confirm").hidden = false;
  $("confirm-yes").onclick = () => { $("confirm").hidden = true; then(); };
  $("confirm-no").onclick = () => { $("confirm").hidden = true; };
}

async function act(kind, ns, name, action, application) {
  const query = application ? `?application=${encodeURIComponent(application)}` : "";
  const res = await fetch(`/api/${kind}/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/${action}${query}`,
    { method: "POST", headers: { "X-Okra-Dashboard": "1" } });
  const body = await res.json().catch(() => ({ error: res.statusText }));
  const what = kind === "clusterfreezes" ? `ClusterFreeze ${name}`
    : application ? `application ${application} of ${ns}/${name}` : `${ns}/${name}`;
  if (res.ok) notice(body.message || `${action}: done`, false);
  else if (body.forbidden) notice(`Forbidden: your Kubernetes user may not ${action} ${what} (RBAC). The API server said: ${body.error}`, true);
  else notice(`${action} ${what} failed: ${body.error}`, true);
}

document.addEventListener("click", (e) => {
  const b = e.target.closest("button[data-action]");
  if (!b) return;
  const { kind, ns, name, action, application, system } = b.dataset;
  const what = system
    ? (application ? `application ${application} of system ${ns}/${name}` : `system ${ns}/${name} (every application)`)
    : kind === "clusterfreezes" ? `ClusterFreeze ${name}`
    : `${kind === "cells" ? "Cell" : kind === "freezes" ? "Freeze" : "ProgressiveRollout"} ${ns}/${name}`;
  confirmThen(`${b.textContent} ${what}?`, () => act(kind, ns, name, action, application));
});

setInterval(() => {
  document.querySelectorAll("[data-since]").forEach((el) => { el.textContent = ago(el.dataset.since); });
  document.querySelectorAll("[data-until]").forEach((el) => {
    const left = Math.max(0, Math.round((Date.parse(el.dataset.until) - Date.now()) / 1000));
    el.textContent = (el.dataset.format || "{s}s left").replace("{s}", left);
  });
}, 1000);

window.addEventListener("hashchange", () => { $("notice").hidden = true; connect(); render(); });
connect();
render();
