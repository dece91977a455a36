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

const T = { rfb: null, ticket: "", display: "", held: null, retry: null, worker: null };

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
  $("vnc-state").dataset.held = held && held.held ? "yes" : "no";
  document.body.dataset.holding = held && held.held && T.display ? "yes" : "no";  // shown large
  $("takeover").hidden = !!(held && held.held);
  $("handback-form").hidden = !mine;
  const asks = !$("answer-box").hidden;
  $("answer-takeover").hidden = !asks || !!(held && held.held) || !T.display;
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
$("answer-takeover").addEventListener("click", () => takeOver(state.view && state.view.taskId));
$("handback-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const body = { note: $("handback-note").value.trim() };
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
