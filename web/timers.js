// Timers, alarms and reminders set by voice: a live countdown, and a line in the log
// when one rings. Fed by the server's "timers" (the whole list) and "timer_fired" events.
"use strict";

window.apaceTimers = (() => {
  const box = document.getElementById("timers");
  let timers = []; // [{id, kind, name, label, dueAt}] with dueAt on this page's clock (ms)
  let ticker = null;

  function update(list) {
    const t = performance.now();
    timers = (Array.isArray(list) ? list : []).map((x) => ({
      id: x.id, kind: x.kind, name: x.name, label: x.label,
      dueAt: t + 1000 * (Number(x.due_in_s) || 0),
      paused: Boolean(x.paused), leftMs: 1000 * (Number(x.due_in_s) || 0),
    }));
    render();
    if (timers.length && !ticker) ticker = setInterval(render, 250);
    if (!timers.length && ticker) { clearInterval(ticker); ticker = null; }
  }

  function title(x) {
    if (x.kind === "reminder") return `Reminder: ${x.label || ""}`;
    if (x.kind === "alarm") return x.label || "Alarm";
    return x.name ? `${x.name} timer` : "Timer";
  }

  function clock(ms) {
    const s = Math.max(0, Math.ceil(ms / 1000));
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    const mm = String(m).padStart(h ? 2 : 1, "0"), ss = String(sec).padStart(2, "0");
    return h ? `${h}:${mm}:${ss}` : `${mm}:${ss}`;
  }

  function render() {
    box.replaceChildren();
    box.hidden = timers.length === 0;
    const t = performance.now();
    for (const x of timers) {
      const row = document.createElement("div");
      row.className = "timer";
      row.dataset.id = String(x.id);
      const name = document.createElement("span");
      name.className = "name";
      name.textContent = title(x);
      const left = document.createElement("span");
      left.className = "left";
      left.textContent = x.paused ? `${clock(x.leftMs)} (paused)` : clock(x.dueAt - t);
      row.append(name, left);
      box.appendChild(row);
    }
  }

  function fired(msg) {
    timers = timers.filter((x) => x.id !== msg.id);
    render();
    const log = document.getElementById("log");
    const line = document.createElement("div");
    line.className = "turn rang";
    line.textContent = `⏰ ${msg.text || "Time is up."}`;
    log.appendChild(line);
    log.scrollTop = log.scrollHeight;
  }

  return { update, fired };
})();
