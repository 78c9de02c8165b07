// apace browser client: mic -> WebRTC -> apace server; replies come back as audio
// on the remote track and as JSON events on the "apace" data channel.
"use strict";

const $ = (id) => document.getElementById(id);
const ui = {
  talk: $("talk"), state: $("state"), dot: $("state-dot"), notice: $("notice"),
  partial: $("partial"), log: $("log"), remote: $("remote"),
};

// Everything an automated test may want to inspect lives here.
// Arrays accumulate over the page's life (across reconnects).
const apace = {
  state: "idle", messages: [], transcripts: [], replies: [], turns: [],
  audio: { maxRms: 0, onsets: [], reported: [] }, rttMs: null, clock: null, connect,
  hangup: () => userHangup(), clockEstimate, reconnects: 0,
};
window.apace = apace;

// The live session; replaced on each connect so late callbacks from an old
// session can tell they are stale and do nothing.
let session = null;

// A call the server or the network ended (not the user) is placed again, after these
// waits (or the server's Retry-After, if longer): on a cluster the new offer lands on a
// live node. The count starts over once a call is up.
const RECONNECT_MS = [500, 2000, 5000];
const retry = { tries: 0, timer: 0 };

// RMS thresholds for onset detection: the gap between them is hysteresis, so
// a reply hovering around one level does not count as many onsets.
const ONSET_ON = 0.01;
const ONSET_REARM = 0.003;

function setState(state) {
  apace.state = state;
  ui.state.textContent = state;
  ui.dot.dataset.state = state;
  const active = !["idle", "closed", "error"].includes(state) || retry.timer !== 0;
  ui.talk.textContent = active ? "Hang up" : "Talk";
  ui.talk.dataset.active = String(active);
}

function showNotice(text) {
  ui.notice.textContent = text;
  ui.notice.hidden = !text;
}

const INSECURE = "The microphone is unavailable because this page is not a secure context. " +
  "Open it as http://localhost:<port> on this machine, or start the server with " +
  "`apace serve --self-signed` and use the https:// address.";

// ---------------------------------------------------------------- connecting

async function connect() {
  if (session) return; // already connecting or connected
  const s = {
    pc: null, dc: null, mic: null, audioCtx: null, timers: [], raf: 0,
    // Page → server clock: {offsetS, rttMs} from the best ping so far (null until one).
    clock: null, unsentOnsets: [],
  };
  session = s;
  apace.clock = null;
  showNotice("");
  setState("connecting");
  // Create and resume the AudioContext before the first await, while we are
  // still inside the click's user activation; otherwise it may stay suspended.
  try {
    s.audioCtx = new AudioContext();
    s.audioCtx.resume().catch(() => {});
  } catch (err) {
    s.audioCtx = null; // the page still works without the level meter
  }
  try {
    s.mic = await openMic();
    if (session !== s) return stopMedia(s);
    s.pc = new RTCPeerConnection({ iceServers: [] });
    s.mic.getAudioTracks().forEach((track) => s.pc.addTrack(track, s.mic));
    s.dc = s.pc.createDataChannel("apace", { ordered: true });
    wirePeer(s);
    const answer = await negotiate(s.pc, processing(s.mic));
    if (session !== s) return;
    await s.pc.setRemoteDescription(answer);
  } catch (err) {
    if (session !== s) return;
    session = null;
    teardown(s);
    if (retry.tries > 0 && err.retryable) return callAgain(err.message, err.retryAfterS);
    showNotice(err.message || String(err));
    setState("error");
  }
}

// The call was lost (the connection failed, or the server ended it): place it again.
function lost(s, why) {
  if (session !== s) return;
  hangup();
  callAgain(why, s.retryAfterS);
}

function callAgain(why, retryAfterS) {
  if (retry.tries >= RECONNECT_MS.length) {
    retry.tries = 0;
    showNotice(`${why} Click Talk to call again.`);
    setState("closed");
    return;
  }
  const wait = Math.max(RECONNECT_MS[retry.tries], (retryAfterS || 0) * 1000);
  retry.tries += 1;
  showNotice(`${why} Calling again…`);
  retry.timer = setTimeout(() => {
    retry.timer = 0;
    apace.reconnects += 1;
    connect();
  }, wait);
  setState("reconnecting");
}

// The user's own hang-up: nothing is called again.
function userHangup() {
  clearTimeout(retry.timer);
  retry.timer = 0;
  retry.tries = 0;
  if (session) hangup();
  else setState("closed");
}

async function openMic() {
  // mediaDevices is only defined in a secure context (https or localhost).
  if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) throw new Error(INSECURE);
  try {
    return await navigator.mediaDevices.getUserMedia({
      audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true, channelCount: 1 },
    });
  } catch (err) {
    if (err.name === "NotAllowedError" || err.name === "SecurityError") {
      throw new Error("Microphone permission was denied. Allow microphone access for this " +
        "site (the icon in the address bar) and click Talk again.");
    }
    if (err.name === "NotFoundError") throw new Error("No microphone was found.");
    throw new Error(`Could not open the microphone: ${err.name}: ${err.message}`);
  }
}

// What the browser did to the microphone itself (it may refuse what was asked): the
// server suppresses noise only where the browser did not, and where it cancels its own
// echo the server's echo guard starts from a quieter echo (docs/rooms.md).
function processing(mic) {
  const track = mic.getAudioTracks()[0];
  const settings = track && track.getSettings ? track.getSettings() : {};
  const said = {};
  for (const key of ["noiseSuppression", "echoCancellation", "autoGainControl"]) {
    if (typeof settings[key] === "boolean") said[key] = settings[key];
  }
  return said;
}

// aiortc does not take trickled candidates, so send the offer only once it
// holds them all (or after 2 s, with whatever has been gathered by then).
async function negotiate(pc, processing) {
  await pc.setLocalDescription(await pc.createOffer());
  await waitForIce(pc, 2000);
  const res = await fetch("/offer", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ sdp: pc.localDescription.sdp, type: pc.localDescription.type, processing }),
  });
  if (!res.ok) {
    let reason = `${res.status} ${res.statusText}`;
    try { reason = (await res.json()).error || reason; } catch (_) { /* not JSON */ }
    const err = new Error(`The server refused the call: ${reason}`);
    err.retryable = res.status === 503; // full or draining: later, or elsewhere
    err.retryAfterS = Number(res.headers.get("Retry-After")) || 0;
    throw err;
  }
  const answer = await res.json();
  return { sdp: answer.sdp, type: answer.type };
}

function waitForIce(pc, timeoutMs) {
  if (pc.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      pc.removeEventListener("icegatheringstatechange", check);
      resolve();
    };
    const check = () => { if (pc.iceGatheringState === "complete") done(); };
    const timer = setTimeout(done, timeoutMs);
    pc.addEventListener("icegatheringstatechange", check);
  });
}

function wirePeer(s) {
  s.pc.ontrack = (ev) => {
    if (session !== s) return;
    const stream = ev.streams[0] || new MediaStream([ev.track]);
    ui.remote.srcObject = stream;
    ui.remote.play().catch(() => {}); // autoplay may need the click's activation
    startMeter(s, stream);
  };
  s.pc.onconnectionstatechange = () => {
    const st = s.pc.connectionState;
    if (session === s && (st === "failed" || st === "closed")) {
      lost(s, st === "failed" ? "The connection to the server failed." : "The call ended.");
    }
  };
  s.dc.onopen = () => s.timers.push(...startPings(s.dc));
  s.dc.onmessage = (ev) => { if (session === s) onMessage(ev.data); };
  s.dc.onclose = () => { if (session === s) lost(s, s.endedWhy || "The call ended."); };
}

// ---------------------------------------------------------------- hanging up

function hangup() {
  const s = session;
  if (!s) return;
  session = null;
  teardown(s);
  ui.partial.textContent = "";
  setState("closed");
}

function teardown(s) {
  s.timers.forEach(clearInterval);
  cancelAnimationFrame(s.raf);
  if (s.dc) s.dc.close();
  if (s.pc) s.pc.close();
  stopMedia(s);
  if (s.audioCtx) s.audioCtx.close().catch(() => {});
  ui.remote.srcObject = null;
}

function stopMedia(s) {
  if (s.mic) s.mic.getTracks().forEach((t) => t.stop());
}

// ------------------------------------------------------------- clock probing

// The server echoes t back with its own clock (server_t, monotonic seconds), so
// each pong gives the round trip and an estimate of the offset between the
// page's clock and the server's. A burst at connect gives an estimate before
// the first reply can play; the slow pings then catch a quieter moment.
const QUICK_PINGS = 5;
const QUICK_PING_MS = 60;
const PING_MS = 2000;

function startPings(dc) {
  const send = () => {
    if (dc.readyState === "open") dc.send(JSON.stringify({ type: "ping", t: performance.now() }));
  };
  send();
  const quick = [];
  for (let i = 1; i < QUICK_PINGS; i++) quick.push(setTimeout(send, i * QUICK_PING_MS));
  return [...quick, setInterval(send, PING_MS)];
}

// One ping's estimate: the server read its clock, most likely, halfway through
// the round trip. The error is at most rtt/2, so the shortest round trip wins.
function clockEstimate(sentMs, receivedMs, serverT) {
  const rttMs = receivedMs - sentMs;
  return { offsetS: serverT - (sentMs + rttMs / 2) / 1000, rttMs };
}

function onPong(s, msg) {
  if (typeof msg.t !== "number") return;
  const received = performance.now();
  apace.rttMs = Math.round((received - msg.t) * 10) / 10;
  if (typeof msg.server_t !== "number") return;
  const estimate = clockEstimate(msg.t, received, msg.server_t);
  if (s.clock && s.clock.rttMs <= estimate.rttMs) return;
  s.clock = estimate;
  apace.clock = estimate;
  const waiting = s.unsentOnsets;
  s.unsentOnsets = [];
  waiting.forEach((t) => reportOnset(s, t));
}

// Tell the server when reply audio started playing here, on its clock: its
// TTFA (browser), the ground truth the dashboard shows.
function reportOnset(s, t) {
  if (!s.clock) {
    s.unsentOnsets.push(t); // sent once the first pong has come back
    return;
  }
  const serverT = t / 1000 + s.clock.offsetS;
  if (!s.dc || s.dc.readyState !== "open") return;
  s.dc.send(JSON.stringify({ type: "audio_onset", server_t: serverT }));
  apace.audio.reported.push({ t, server_t: serverT, rttMs: s.clock.rttMs });
}

// --------------------------------------------------------------- audio meter

function startMeter(s, stream) {
  if (!s.audioCtx) return;
  s.audioCtx.resume().catch(() => {});
  const analyser = s.audioCtx.createAnalyser();
  analyser.fftSize = 2048;
  s.audioCtx.createMediaStreamSource(stream).connect(analyser);
  const buf = new Float32Array(analyser.fftSize);
  let armed = true;
  const sample = () => {
    analyser.getFloatTimeDomainData(buf);
    let sum = 0;
    for (let i = 0; i < buf.length; i++) sum += buf[i] * buf[i];
    const rms = Math.sqrt(sum / buf.length);
    if (rms > apace.audio.maxRms) apace.audio.maxRms = rms;
    if (armed && rms > ONSET_ON) {
      const t = performance.now();
      apace.audio.onsets.push(t);
      if (session === s) reportOnset(s, t);
      armed = false;
    } else if (rms < ONSET_REARM) {
      armed = true;
    }
    ui.talk.style.setProperty("--level", Math.min(1, rms * 8).toFixed(3));
  };
  const frame = () => { sample(); s.raf = requestAnimationFrame(frame); };
  s.raf = requestAnimationFrame(frame);
  // Hidden/headless tabs throttle rAF; the timer keeps onset times accurate.
  s.timers.push(setInterval(sample, 20));
}

// ------------------------------------------------------- data-channel events

// The turn being built in the log: {el, user, assistant, interrupted}; null
// between turns. Only a "turn" message finishes it.
let current = null;

function onMessage(data) {
  let msg;
  try { msg = JSON.parse(data); } catch (_) { return; }
  apace.messages.push(msg);
  switch (msg.type) {
    case "ready": retry.tries = 0; setState("listening"); break;
    case "speech_started": setState("hearing you"); break;
    case "transcript": onTranscript(msg); break;
    case "reply_delta": onReplyDelta(msg); break;
    case "barge_in": onBargeIn(); break;
    case "turn": onTurn(msg); break;
    case "error": onServerError(msg); break;
    case "going_away": onGoingAway(msg); break;
    case "pong": onPong(session, msg); break;
    case "timers": window.apaceTimers.update(msg.timers); break;
    case "timer_fired": window.apaceTimers.fired(msg); break;
  }
}

function onGoingAway(msg) {
  showNotice(`The server is ending this call: ${msg.message}`);
  if (session) {
    session.endedWhy = `The server ended the call (${msg.message}).`;
    session.retryAfterS = msg.retry_after_s || 0;
  }
}

function onTranscript(msg) {
  if (!msg.final) {
    ui.partial.textContent = msg.text;
    return;
  }
  ui.partial.textContent = "";
  apace.transcripts.push(msg.text);
  // A second final transcript before any "turn" means the server dropped a
  // speculative reply (the user kept talking): its lines were never a turn.
  if (current && current.user) current.el.remove();
  current = newTurn();
  current.user = addLine(current.el, "user", msg.text);
  setState("thinking");
}

function onReplyDelta(msg) {
  if (!current) current = newTurn();
  if (current.interrupted) return; // anything after a barge-in was never spoken
  if (!current.assistant) current.assistant = addLine(current.el, "assistant", "");
  current.assistant.querySelector(".text").textContent += msg.text;
  if (apace.state === "thinking") setState("speaking");
  scrollLog();
}

function onBargeIn() {
  if (!current || !current.assistant || current.interrupted) return;
  current.interrupted = true;
  markInterrupted(current.assistant);
  setState("hearing you");
}

function onTurn(msg) {
  apace.turns.push(msg);
  apace.replies.push(msg.reply);
  const turn = current || newTurn();
  current = null;
  if (!turn.user && msg.transcript) turn.user = addLine(turn.el, "user", msg.transcript);
  if (!turn.assistant && msg.reply) turn.assistant = addLine(turn.el, "assistant", msg.reply);
  if (msg.interrupted && turn.assistant && !turn.interrupted) markInterrupted(turn.assistant);
  const metrics = document.createElement("div");
  metrics.className = "metrics";
  metrics.textContent = formatMetrics(msg.timeline_ms || {}) + (msg.skill ? ` · skill: ${msg.skill}` : "")
    + (msg.source ? ` · source: ${msg.source}` : "");
  turn.el.appendChild(metrics);
  // After a barge-in the user is still talking; otherwise the floor is theirs again.
  setState(msg.interrupted ? "hearing you" : "listening");
  scrollLog();
}

function onServerError(msg) {
  showNotice(`Server error: ${msg.message}`);
  current = null; // a failed reply never gets a "turn"; keep what it showed
  if (apace.state === "thinking" || apace.state === "speaking") setState("listening");
}

// ------------------------------------------------------------------ the log

function newTurn() {
  const el = document.createElement("div");
  el.className = "turn";
  ui.log.appendChild(el);
  return { el, user: null, assistant: null, interrupted: false };
}

function addLine(parent, who, text) {
  const line = document.createElement("div");
  line.className = `line ${who}`;
  const label = document.createElement("span");
  label.className = "who";
  label.textContent = who === "user" ? "you" : "apace";
  const body = document.createElement("span");
  body.className = "text";
  body.textContent = text;
  line.append(label, body);
  parent.appendChild(line);
  scrollLog();
  return line;
}

function markInterrupted(line) {
  line.classList.add("interrupted");
  line.querySelector(".text").textContent += "…";
  const tag = document.createElement("span");
  tag.className = "tag";
  tag.textContent = "interrupted";
  line.appendChild(tag);
}

// timeline_ms keys shown under a turn, in display order; missing ones are skipped.
const METRICS = [["ttfa_server", "TTFA"], ["ttfa_browser", "TTFA (browser)"], ["ttft", "TTFT"], ["ttua", "TTUA"]];

function formatMetrics(t) {
  const parts = METRICS.filter(([key]) => t[key] != null)
    .map(([key, label]) => `${label} ${Math.round(t[key])} ms`);
  return parts.join(" · ") || "no timings";
}

function scrollLog() {
  ui.log.scrollTop = ui.log.scrollHeight;
}

// ------------------------------------------------------------------ wiring

ui.talk.addEventListener("click", () => (session || retry.timer ? userHangup() : connect()));
window.addEventListener("pagehide", () => userHangup());
setState("idle");
// Say so up front rather than after the click, when it cannot work anyway.
if (!window.isSecureContext) showNotice(INSECURE);
