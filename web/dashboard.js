// apace dashboard: turns from /api/turns, then live over /ws/dashboard ("turn" and
// "stats" messages). No libraries: the waterfall is plain SVG.
"use strict";

// The timeline's stamps, in pipeline order (pipeline/timeline.py METRICS).
const STAGES = {
  endpoint: "endpoint", asr_final: "ASR final", verdict: "verdict", llm_start: "LLM start",
  ttft: "TTFT", first_clause: "first clause",
  ttfa_server: "TTFA server", ttfa_browser: "TTFA browser", ttua: "TTUA",
};
const MAX_TURNS = 50;
const SVG_NS = "http://www.w3.org/2000/svg";
// Waterfall geometry in SVG units; every turn uses the same axis so bars compare.
const W = 1000, X0 = 112, X1 = 850, ROW = 20, BAR = 12, TOP = 18;

const $ = (id) => document.getElementById(id);
const state = { turns: new Map(), stats: null, feed: "connecting", retryMs: 500 };
// For tests and the curious: what the page is drawing from.
window.dashboard = { state, turns: () => [...state.turns.values()] };

// ------------------------------------------------------------------ data in

const keyOf = (t) => `${t.session}:${t.turn}`;

function upsert(record) {
  const { type: _type, ...turn } = record;
  state.turns.set(keyOf(turn), turn);
  if (state.turns.size > MAX_TURNS) state.turns.delete(state.turns.keys().next().value);
  renderTurns();
}

async function loadTurns() {
  try {
    const res = await fetch("/api/turns");
    (await res.json()).turns.forEach(upsert);
  } catch (_) { /* the feed's reconnect will try again */ }
  renderTurns();
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}/ws/dashboard`);
  ws.onopen = () => {
    state.retryMs = 500;
    setFeed("live");
    loadTurns(); // after the socket is open, so no turn falls between the two
  };
  ws.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    if (msg.type === "turn") upsert(msg);
    else if (msg.type === "stats") renderStats(msg);
  };
  ws.onclose = (ev) => {
    setFeed("reconnecting", ev.reason);
    setTimeout(connect, state.retryMs);
    state.retryMs = Math.min(state.retryMs * 2, 10000);
  };
}

function setFeed(feed, reason) {
  state.feed = feed;
  $("feed-dot").dataset.state = feed;
  $("feed-state").textContent = reason ? `${feed} (${reason})` : feed;
}

// ------------------------------------------------------------- formatting

const ms = (v) => (v == null ? "–" : `${Math.round(v)} ms`);
const pct = (v) => (v == null ? "–" : `${Math.round(v * 100)}%`);
const objective = () => (state.stats ? state.stats.slo.objective_ms : null);

function el(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  Object.entries(attrs).forEach(([k, v]) => node.setAttribute(k, v));
  if (text != null) node.textContent = text;
  return node;
}

function svg(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG_NS, tag);
  Object.entries(attrs).forEach(([k, v]) => node.setAttribute(k, String(v)));
  if (text != null) node.textContent = text;
  return node;
}

// ------------------------------------------------------------------ stats

function renderStats(stats) {
  state.stats = stats;
  Object.entries(stats.latency).forEach(([name, s]) => renderPercentiles(name, s));
  renderSlo(stats.slo);
  const e = stats.engine;
  const spec = e.speculation;
  $("spec-committed").textContent = `${spec.committed} of ${spec.started}`;
  $("spec-cancelled").textContent = String(spec.cancelled);
  $("spec-wasted").textContent = `${spec.wasted_tokens}\u00a0tok · ${ms(spec.wasted_ms)}`;
  $("cache-reply").textContent = cacheText(e.reply_cache);
  $("cache-tts").textContent = cacheText(e.tts_cache);
  $("draft-acceptance").textContent =
    `${pct(e.draft.acceptance)} (${e.draft.accepted}/${e.draft.proposed})`;
  $("tokens-per-s").textContent =
    e.llm_tokens_per_s == null ? "–" : e.llm_tokens_per_s.toFixed(1);
  const lag = stats.loop_lag_ms;
  $("loop-lag").textContent = lag.last == null ? "–" : `${lag.last.toFixed(1)} ms`;
  $("loop-lag-max").textContent = lag.max == null ? "–" : `${lag.max.toFixed(1)} ms`;
  $("sessions").textContent = String(stats.sessions);
  $("turn-count").textContent = String(e.turns);
  $("barge-ins").textContent = String(e.barge_ins);
  renderMemory(stats.memory || {});
  renderTurns(); // the SLO line may have moved
}

function mib(bytes) {
  // A no-break space: a long line of them wraps between values, never inside one.
  return bytes == null ? "–" : `${(bytes / 1048576).toFixed(1)}\u00a0MiB`;
}

function renderMemory(m) {
  $("memory-rss").textContent = mib(m.rss_bytes);
  const kv = m.kv_bytes_per_session || {};
  const ids = Object.keys(kv);
  $("memory-kv").textContent = m.llm == null ? "– (a context per session)"
    : ids.length === 0 ? `none held (${mib(m.llm.kv_bytes_reserved)} reserved)`
      : ids.map((id) => `#${id}\u00a0${mib(kv[id])}`).join("\u00a0· ");
  const steps = m.llm && m.llm.tokens_per_step;
  $("llm-batch").textContent = steps == null ? "–" : steps.toFixed(2);
}

function cacheText(c) {
  return `${pct(c.hit_rate)} (${c.hits}/${c.hits + c.misses})`;
}

function renderPercentiles(name, s) {
  const tile = document.querySelector(`[data-tile="${name}"] .pcts`);
  if (!tile) return;
  const limit = name.startsWith("ttfa") ? objective() : null;
  tile.replaceChildren(...["p50", "p95", "p99"].map((q) => {
    const box = el("div", { class: "pct", "data-q": q });
    const value = el("span", { class: "v" }, s[q] == null ? "–" : String(Math.round(s[q])));
    if (limit != null && s[q] != null && s[q] > limit) value.classList.add("over");
    box.append(value, el("span", { class: "k" }, q));
    return box;
  }));
  tile.parentElement.querySelector(".n").textContent = `n=${s.count} · ms`;
}

function renderSlo(slo) {
  $("slo-objective").textContent = `TTFA ≤ ${Math.round(slo.objective_ms)} ms`;
  const value = $("slo-value");
  value.textContent = pct(slo.attainment);
  value.className = "big" + (slo.attainment == null ? "" : slo.attainment >= 0.9 ? " good" : " bad");
  $("slo-bar").style.width = `${Math.round((slo.attainment || 0) * 100)}%`;
  $("slo-note").textContent =
    `${slo.met} of ${slo.count} turns · browser TTFA where measured, else server`;
}

// ------------------------------------------------------------- waterfalls

// A round axis end above every turn's latest stamp and the SLO line.
function axisEnd(turns) {
  let end = Math.max(objective() || 0, ...turns.map(lastStamp), 100) * 1.05;
  const step = tickStep(end);
  return Math.ceil(end / step) * step;
}

function tickStep(end) {
  return [50, 100, 200, 250, 500, 1000, 2000, 5000, 10000].find((s) => end / s <= 8) || 20000;
}

const lastStamp = (t) => Math.max(0, ...(t.waterfall || []).map((s) => s.end_ms));

function renderTurns() {
  const turns = [...state.turns.values()].reverse();
  $("empty").hidden = turns.length > 0;
  const end = axisEnd(turns);
  $("turns").replaceChildren(...turns.map((t) => turnCard(t, end)));
}

function turnCard(t, end) {
  const card = el("article", { class: "turn-card", "data-key": keyOf(t) });
  const head = el("div", { class: "turn-head" });
  const said = el("span", { class: "said" });
  said.append("you: ", el("b", {}, t.transcript), "  →  apace: ", el("b", {}, t.reply));
  head.append(el("span", { class: "id" }, `#${t.session}.${t.turn}`), said);
  if (t.interrupted) head.append(el("span", { class: "tag" }, "interrupted"));
  head.append(...qualityTags(t));
  card.append(head, waterfallSvg(t.waterfall || [], end), numbers(t.timeline_ms || {}));
  return card;
}

// What the reply was worth, beside how fast it came: the server's rule-free checks.
function qualityTags(t) {
  const q = t.quality || {};
  const tags = [];
  if (t.skill) tags.push(el("span", { class: "tag skill", ...(t.source ? { title: `source: ${t.source}` } : {}) },
                            `skill: ${t.skill}`));
  if (q.repeat) tags.push(el("span", { class: "tag bad" }, "repeat"));
  if (q.echo) tags.push(el("span", { class: "tag bad" }, "echo"));
  if (q.sentences > 2) tags.push(el("span", { class: "tag warn" }, `${q.sentences} sentences`));
  if (q.refusal) tags.push(el("span", { class: "tag" }, "can't"));
  if (q.ok) tags.push(el("span", { class: "tag ok", title: `${q.spoken_s} s spoken` }, "ok"));
  return tags;
}

function waterfallSvg(stages, end) {
  const height = TOP + stages.length * ROW + 4;
  const root = svg("svg", { class: "wf", viewBox: `0 0 ${W} ${height}`, role: "img",
    "aria-label": "waterfall" });
  const x = (v) => X0 + (Math.max(0, v) / end) * (X1 - X0);
  const step = tickStep(end);
  for (let v = 0; v <= end + 1e-6; v += step) {
    root.append(svg("line", { class: "grid", x1: x(v), x2: x(v), y1: TOP - 4, y2: height }));
    root.append(svg("text", { class: "tick", x: x(v), y: 11, "text-anchor": "middle" }, String(v)));
  }
  if (objective() != null) {
    const at = x(objective());
    root.append(svg("line", { class: "slo", x1: at, x2: at, y1: TOP - 4, y2: height }));
  }
  stages.forEach((s, i) => root.append(stageRow(s, i, x)));
  return root;
}

function stageRow(s, i, x) {
  const y = TOP + i * ROW;
  const row = svg("g", { class: "stage", "data-stage": s.name });
  const width = Math.max(1.5, x(s.end_ms) - x(s.start_ms)); // a zero-length stage still shows
  row.append(
    svg("text", { class: "name", x: X0 - 8, y: y + BAR - 1, "text-anchor": "end" }, STAGES[s.name] || s.name),
    svg("rect", { class: `s-${s.name}`, x: x(s.start_ms), y: y + 2, width, height: BAR, rx: 2 }),
    svg("text", { class: "dur", x: X1 + 10, y: y + BAR - 1 },
      `+${Math.round(s.end_ms - s.start_ms)}  →  ${Math.round(s.end_ms)} ms`),
  );
  row.querySelector("rect").append(svg("title", {},
    `${STAGES[s.name] || s.name}: ${s.start_ms} → ${s.end_ms} ms (${(s.end_ms - s.start_ms).toFixed(1)} ms)`));
  return row;
}

function numbers(timelineMs) {
  const list = el("ul", { class: "numbers" });
  Object.entries(STAGES).forEach(([name, label]) => {
    if (timelineMs[name] == null) return;
    const item = el("li", { "data-metric": name, "data-ms": String(timelineMs[name]) }, `${label} `);
    item.append(el("b", {}, ms(timelineMs[name])));
    list.append(item);
  });
  return list;
}

function legend() {
  const items = Object.entries(STAGES).map(([name, label]) => {
    const item = el("li");
    item.append(el("i", { style: `background: var(--${name})` }), label);
    return item;
  });
  const slo = el("li", { id: "legend-slo" });
  slo.append(el("i", { class: "slo-key" }), "TTFA objective");
  $("legend").replaceChildren(...items, slo);
}

// ------------------------------------------------------------------ wiring

legend();
loadTurns();
fetch("/api/stats").then((r) => r.json()).then(renderStats).catch(() => {});
connect();
