// The live view and the takeover (shared/DESIGN.md section 11). The screen Jarvis drives,
// through noVNC (shipped in ./novnc/, no CDN) over the WebSocket /api/vnc/SCREEN that the
// API relays to x11vnc: main (the daemon's display), or private/N while a task from a
// channel with a private display runs there (GET /api/takeover says which); view-only
// while Jarvis works (x11vnc itself drops a viewer's input). While a person holds the
// screen it is shown large, over the panel.
// "Take over" (POST /api/takeover) pauses the agent and reconnects with the takeover's
// ticket, which lets this page's input through; "Hand back" (POST /api/handback {note})
// gives the screen back. Where no live view exists, live.js's JPEG stays. Uses $, api,
// postJSON and state from panel.js.
// A fleet (jarvis serve --fleet): the screen shown is the one of the worker that runs the
// watched task (GET /api/workers), at /api/vnc/worker/NAME when it runs on this machine;
// a worker on another machine has no live view here, but can still be taken over (paused)
// and handed back.
import RFB from "./novnc/core/rfb.js";

const T = { rfb: null, ticket: "", display: "", held: null, retry: null, worker: null,
            enlarged: false };

function url(ticket) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const path = T.display.split("/").map(encodeURIComponent).join("/");
  const base = `${scheme}://${location.host}/api/vnc/${path}`;
  return ticket ? `${base}?ticket=${encodeURIComponent(ticket)}` : base;
}

function connectView() {
  clearTimeout(T.retry);
  if (T.rfb) {
    T.rfb.jarvisReplaced = true;
    T.rfb.disconnect();
  }
  const box = $("vnc");
  box.textContent = "";
  const rfb = new RFB(box, url(T.ticket), { shared: true });
  rfb.viewOnly = !T.ticket;
  rfb.scaleViewport = true;
  rfb.background = "#1d2330";
  box.dataset.mode = T.ticket ? "control" : "view";
  box.dataset.connected = "no";
  rfb.addEventListener("connect", () => {
    box.dataset.connected = "yes";
    // the box takes the screen's own shape, so the picture fills it at any width
    if (rfb._fbWidth && rfb._fbHeight) {
      box.style.setProperty("--screen-ratio", `${rfb._fbWidth} / ${rfb._fbHeight}`);
      box.dataset.screen = `${rfb._fbWidth}x${rfb._fbHeight}`;
    }
    fit();
    document.body.dataset.vnc = "on";  // live.js leaves its JPEG hidden
    if (T.ticket) rfb.focus();
  });
  rfb.addEventListener("disconnect", () => {
    box.dataset.connected = "no";
    if (rfb.jarvisReplaced) return;
    if (T.ticket) T.ticket = "";  // the takeover ended (hand back, idle, another page)
    T.retry = setTimeout(connectView, 1000);
  });
  T.rfb = rfb;
}

// Scaled to fit the box. Shown large (a takeover, or enlarged), where a person reads and
// points: scaled while that keeps text readable and a CSS pixel within two of the screen's
// (scale >= MIN_SCALE); below it (a phone) the screen is shown 1:1 in the box, panned with
// "Pan" (drags then move the view, not the desktop's mouse). The small view always fits.
const MIN_SCALE = 0.5;
function fit() {
  const rfb = T.rfb;
  const box = $("vnc");
  if (!rfb || !rfb._fbWidth || !rfb._fbHeight || !box.clientWidth) return;
  const scale = Math.min(box.clientWidth / rfb._fbWidth, box.clientHeight / rfb._fbHeight);
  const pan = scale < MIN_SCALE && document.body.dataset.big === "yes";
  if (rfb.scaleViewport === pan) rfb.scaleViewport = !pan;
  if (rfb.clipViewport !== pan) rfb.clipViewport = pan;
  if (!pan) rfb.dragViewport = false;
  box.dataset.fit = pan ? "pan" : "scale";
  $("vnc-pan").hidden = !pan;
  $("vnc-pan").textContent = rfb.dragViewport ? "Pan: on (drag moves the view)" : "Pan";
}
new ResizeObserver(() => fit()).observe($("vnc"));

function stopView() {
  clearTimeout(T.retry);
  if (T.rfb) {
    T.rfb.jarvisReplaced = true;
    T.rfb.disconnect();
    T.rfb = null;
  }
  $("vnc").textContent = "";
  $("vnc").dataset.connected = "no";
  delete document.body.dataset.vnc;
}

function render() {
  const held = T.held;
  const mine = !!T.ticket;
  const w = T.worker;
  const where = w ? ` on worker ${w.name}${w.live ? "" : " (another machine: no live view here)"}` : "";
  $("vnc").dataset.worker = w ? w.name : "";
  $("vnc-state").textContent = !held || !held.held
    ? `Jarvis has the screen${where}${w && !w.live ? "" : " (view only)"}`
    : `A person has the screen (${held.by})${where}${mine && (!w || w.live) ? ": your input goes to the desktop" : ""}`;
  const isHeld = !!(held && held.held);
  $("vnc-state").dataset.held = isHeld ? "yes" : "no";
  const holding = isHeld && !!T.display;
  if (!T.display) T.enlarged = false;
  // large while a person holds the screen (or after a click on the small view)
  document.body.dataset.holding = holding ? "yes" : "no";  // a person holds the screen
  document.body.dataset.big = holding || T.enlarged ? "yes" : "no";
  fit();
  $("vnc-size").hidden = holding || !T.display;
  $("vnc-size").textContent = T.enlarged ? "Smaller" : "Enlarge";
  $("vnc-full").hidden = !T.display;
  const asks = !$("answer-box").hidden;
  // one "Take over" per state: the question's own while Jarvis asks; only while a task
  // runs or waits
  // another face's hold (the TUI's) is taken over only after asking the person
  const theirs = isHeld && !mine && !!held.by && held.by !== "web";
  $("takeover").hidden = (isHeld && !theirs) || asks || !taskActive();
  $("takeover").textContent = theirs ? `Take it over from ${held.by}` : "Take over";
  $("handback-form").hidden = !mine;
  $("answer-takeover").hidden = !asks || isHeld || !T.display;
  if (isHeld) {  // the task's badge: paused, not "in progress"
    $("task-status").textContent = "paused: a person has the screen";
    $("task-status").className = "status paused";
  }
}

function taskActive() {
  return [...state.todos.values()].some((t) => ["in_progress", "needs_user"].includes(t.status));
}

// The fleet's worker that runs the watched task (or whose screen is held); null when
// the daemon runs its tasks itself, or no worker runs it.
async function fleetWorker() {
  const body = await (await api("/api/workers")).json();
  if (!body.fleet) return null;
  const task = (T.held.held && T.held.task_id) || (state.view && state.view.taskId);
  const runs = body.workers.find((w) => task && w.task === task);
  if (runs) return runs;
  // the task ended: keep showing its worker while it lives
  return T.worker && body.workers.find((w) => w.name === T.worker.name) || null;
}

async function refresh() {
  let worker = null;
  try {
    T.held = await (await api("/api/takeover")).json();
    worker = await fleetWorker();
  } catch {
    return;
  }
  T.worker = worker;
  const shown = T.held.displays || [];  // the agent's screen: main, or a private display
  let display = shown.includes(T.held.screen) ? T.held.screen : shown[0] || "";
  if (worker) display = worker.live ? `worker/${worker.name}` : "";
  $("vnc-box").hidden = !display && !worker;
  if (!display && T.display) {
    T.display = "";
    stopView();
  }
  if (display && display !== T.display) {
    T.display = display;
    connectView();
  }
  if (!T.held.held && T.ticket) {  // ended elsewhere (idle, the TUI, another page)
    T.ticket = "";
    if (T.display) connectView();
  }
  render();
}

async function takeOver(taskId) {
  const body = { by: "web" };
  const other = T.held && T.held.held && !T.ticket ? T.held.by : null;
  if (other && other !== "web") {
    if (!window.confirm(`${other} has the screen: take it over?`)) return;
    body.take_over = true;
  }
  if (!taskId && T.worker && T.worker.task) taskId = T.worker.task;
  if (taskId) body.task_id = taskId;
  const response = await postJSON("/api/takeover", body);
  const answer = await response.json();
  if (!response.ok) {
    $("vnc-state").textContent = `Cannot take over: ${answer.detail}`;
    return;
  }
  if (!T.worker && answer.screen) T.display = answer.screen;  // the screen it holds
  T.held = { ...answer, displays: [T.display] };
  T.ticket = answer.ticket;
  if (T.display) connectView();
  render();
}

$("takeover").addEventListener("click", () => takeOver(null));
$("vnc").addEventListener("click", () => {  // the small view: a click enlarges it
  if (T.held && T.held.held) return;
  if (!T.enlarged) { T.enlarged = true; render(); }
});
$("vnc-size").addEventListener("click", () => { T.enlarged = !T.enlarged; render(); });
$("vnc-pan").addEventListener("click", () => {
  if (T.rfb) T.rfb.dragViewport = !T.rfb.dragViewport;
  fit();
});
$("vnc-full").addEventListener("click", () => {
  if (document.fullscreenElement) document.exitFullscreen();
  else $("vnc-box").requestFullscreen().catch(() => {});
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && T.enlarged && !T.ticket) { T.enlarged = false; render(); }
});
// Closing the page while holding the screen: the browser asks first; if it closes anyway,
// the screen goes back to Jarvis at once, and the journal and the model are told why.
window.addEventListener("beforeunload", (event) => {
  if (!T.ticket) return;
  event.preventDefault();
  event.returnValue = "";
});
window.addEventListener("pagehide", () => {
  if (!T.ticket) return;
  const body = { note: "", reason: "closed", by: "web" };
  if (T.worker && T.held && T.held.task_id) body.task_id = T.held.task_id;
  fetch("/api/handback", { method: "POST", keepalive: true, credentials: "same-origin",
    headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  T.ticket = "";
});
$("answer-takeover").addEventListener("click", () => takeOver(state.view && state.view.taskId));
$("handback-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const body = { note: $("handback-note").value.trim(), by: "web" };
  if (T.worker && T.held && T.held.held && T.held.task_id) body.task_id = T.held.task_id;
  const response = await postJSON("/api/handback", body);
  if (!response.ok) {
    $("vnc-state").textContent = `Cannot hand back: ${(await response.json()).detail}`;
    return;
  }
  $("handback-note").value = "";
  T.ticket = "";
  if (T.display) connectView();
  await refresh();
});

document.addEventListener("jarvis:ready", refresh);
document.addEventListener("jarvis:controls", render);
document.addEventListener("jarvis:line", (event) => {
  if (["takeover_started", "takeover_ended"].includes(event.detail.kind)) refresh();
  if (["task_finished", "task_started"].includes(event.detail.kind)) setTimeout(render, 0);
  if (event.detail.kind === "task_started") setTimeout(refresh, 0);  // maybe another worker
});
setInterval(() => { if (!document.hidden) refresh(); }, 3000);
document.addEventListener("jarvis:show", () => refresh());  // another task: maybe another worker
