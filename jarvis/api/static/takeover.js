// The live view and the takeover (shared/DESIGN.md section 11). The display Jarvis drives,
// through noVNC (shipped in ./novnc/, no CDN) over the WebSocket /api/vnc/main that the API
// relays to x11vnc: view-only while Jarvis works (x11vnc itself drops a viewer's input).
// "Take over" (POST /api/takeover) pauses the agent and reconnects with the takeover's
// ticket, which lets this page's input through; "Hand back" (POST /api/handback {note})
// gives the screen back. Where no live view exists, live.js's JPEG stays. Uses $, api,
// postJSON and state from panel.js.
import RFB from "./novnc/core/rfb.js";

const T = { rfb: null, ticket: "", display: "", held: null, retry: null };

function url(ticket) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const base = `${scheme}://${location.host}/api/vnc/${encodeURIComponent(T.display)}`;
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

function render() {
  const held = T.held;
  const mine = !!T.ticket;
  $("vnc-state").textContent = !held || !held.held
    ? "Jarvis has the screen (view only)"
    : `A person has the screen (${held.by})${mine ? ": your input goes to the desktop" : ""}`;
  $("vnc-state").dataset.held = held && held.held ? "yes" : "no";
  $("takeover").hidden = !!(held && held.held);
  $("handback-form").hidden = !mine;
  const asks = !$("answer-box").hidden;
  $("answer-takeover").hidden = !asks || !!(held && held.held) || !T.display;
}

async function refresh() {
  try {
    T.held = await (await api("/api/takeover")).json();
  } catch {
    return;
  }
  const display = (T.held.displays || [])[0] || "";
  $("vnc-box").hidden = !display;
  if (display && display !== T.display) {
    T.display = display;
    connectView();
  }
  if (!T.held.held && T.ticket) {  // ended elsewhere (idle, the TUI, another page)
    T.ticket = "";
    connectView();
  }
  render();
}

async function takeOver(taskId) {
  const body = { by: "web" };
  if (taskId) body.task_id = taskId;
  const response = await postJSON("/api/takeover", body);
  const answer = await response.json();
  if (!response.ok) {
    $("vnc-state").textContent = `Cannot take over: ${answer.detail}`;
    return;
  }
  T.held = { ...answer, displays: [T.display] };
  T.ticket = answer.ticket;
  connectView();
  render();
}

$("takeover").addEventListener("click", () => takeOver(null));
$("answer-takeover").addEventListener("click", () => takeOver(state.view && state.view.taskId));
$("handback-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const response = await postJSON("/api/handback", { note: $("handback-note").value.trim() });
  if (!response.ok) {
    $("vnc-state").textContent = `Cannot hand back: ${(await response.json()).detail}`;
    return;
  }
  $("handback-note").value = "";
  T.ticket = "";
  connectView();
  await refresh();
});

document.addEventListener("jarvis:ready", refresh);
document.addEventListener("jarvis:controls", render);
document.addEventListener("jarvis:line", (event) => {
  if (["takeover_started", "takeover_ended"].includes(event.detail.kind)) refresh();
  if (["task_finished", "task_started"].includes(event.detail.kind)) setTimeout(render, 0);
});
setInterval(() => { if (!document.hidden) refresh(); }, 3000);
