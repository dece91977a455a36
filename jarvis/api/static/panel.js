// The Jarvis web panel: a thin client of the control API (no build step, no CDN).
// Auth is the HttpOnly session cookie; every model or tool text goes in as textContent.
// approvals.js, budget.js and live.js follow the stream through DOM events (see emit()).
"use strict";

const $ = (id) => document.getElementById(id);
const CLICKS = new Set(["click", "double_click", "right_click", "mouse_move", "scroll"]);
const OPEN = new Set(["pending", "in_progress", "needs_user"]);

const state = {
  words: {},           // status -> how a person reads it, from GET /api/task-words
  lastSeq: 0,          // the newest seq this page has seen (the stream resumes after it)
  source: null,        // the EventSource
  todos: new Map(),    // id -> todo
  view: null,          // the task shown: see newView()
};

// A task status as a person reads it ("in progress", "waiting for you"): the words every
// face uses (jarvis.task_words, served by GET /api/task-words).
function said(status) {
  return state.words[status] || status.replaceAll("_", " ");
}

function newView(taskId) {
  // input/output/cost: the task's over all its runs; base: what the runs before this one
  // used; run: this run's number (a task runs again after an answer or an update).
  return { taskId, seen: 0, steps: new Map(), step: null, cards: new Map(), click: null,
           input: 0, output: 0, cost: 0, status: "", run: 1,
           base: { input: 0, output: 0, cost: 0 } };
}

// "jarvis:line": each stream line as it arrives (any task); "jarvis:apply": each line of the
// task shown (journal replay and live, once each); "jarvis:show": another task is shown;
// "jarvis:open": the stream (re)connected; "jarvis:ready": logged in, the page is up.
function emit(name, detail) {
  document.dispatchEvent(new CustomEvent(`jarvis:${name}`, { detail }));
}

// A call's arguments come rendered by the daemon (shown_call, shown_arguments: characters a
// person cannot see spelled out as \u{...}, the same rule as the TUI's); a line journaled
// before the daemon sent them falls back to plain JSON.
function shownArguments(r) {
  return r.shown_arguments ?? JSON.stringify(r.arguments || {}, null, 2);
}

class LoggedOut extends Error {}

// Every request of the panel: a 401 (the session ended, the token changed) brings the
// login box back with a word, and throws LoggedOut for the caller to stop quietly.
async function api(path, options = {}) {
  const response = await fetch(path, { credentials: "same-origin", ...options });
  if (response.status === 401) {
    showLogin("You are logged out (the session ended or the token changed): log in again.");
    throw new LoggedOut("not logged in");
  }
  return response;
}

// An action from a button or form: a LoggedOut is already shown by the login box.
function quietly(action) {
  return async (...args) => {
    try {
      await action(...args);
    } catch (err) {
      if (!(err instanceof LoggedOut)) throw err;
    }
  };
}

async function postJSON(path, body) {
  return api(path, { method: "POST", headers: { "content-type": "application/json" },
                     body: JSON.stringify(body) });
}

// --- login ---------------------------------------------------------------------
function showLogin(why) {
  if (state.source) { state.source.close(); state.source = null; }
  $("login").hidden = false;
  $("app").hidden = true;
  $("login-why").textContent = why || "";
  $("login-why").hidden = !why;
  setConn("logged out", "closed");
}

$("login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const response = await fetch("/api/login", {
    method: "POST", credentials: "same-origin", headers: { "content-type": "application/json" },
    body: JSON.stringify({ token: $("login-token").value.trim() }) });
  if (response.ok) { location.reload(); return; }
  $("login-error").textContent = "That token is not right.";
  $("login-error").hidden = false;
});

// --- the stream ------------------------------------------------------------------
function setConn(text, kind) {
  $("conn").textContent = text;
  $("conn").dataset.state = kind;
}

function connect() {
  if (state.source) state.source.close();
  // After the first connect the browser itself resends Last-Event-ID on reconnects.
  const source = new EventSource(`/api/events?after=${state.lastSeq}`);
  state.source = source;
  source.onopen = () => { setConn("live", "live"); emit("open"); };
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) {  // refused (restarted, or logged out)
      setConn("reconnecting…", "reconnecting");
      // a 401 shows the login box (and closes the stream) instead of retrying forever
      api("/api/health").catch(() => {});
      setTimeout(() => { if (state.source === source) connect(); }, 1500);
    } else {
      setConn("reconnecting…", "reconnecting");
    }
  };
  source.onmessage = (event) => onLine(event);
  for (const kind of KINDS) source.addEventListener(kind, onLine);
  source.addEventListener("gap", () => setConn("live (caught up after a gap)", "live"));
  source.addEventListener("routing_failed", onRoutingFailed);
}

// A message that could not become a task (the router's key refused, a bug): said, not lost.
function onRoutingFailed(event) {
  let record;
  try { record = JSON.parse(event.data); } catch { return; }
  const line = $("routing-error");
  line.textContent = `Message ${record.message_id} could not be routed: ${record.error} ` +
    `(it waits in the inbox; next try in ${Math.round(record.retry_in_s)} s)`;
  line.hidden = false;
  emit("routing_failed", record);
}

const KINDS = ["task_started", "step_started", "model_text_delta", "tool_call_streaming",
  "tool_call_started", "tool_call_finished", "step_finished", "verification_finished",
  "task_finished", "warning", "reply_ready", "model_retry", "tool_mode_fallback",
  "malformed_entry", "approval_requested", "approval_resolved", "budget_used",
  "takeover_started", "takeover_ended"];

function onLine(event) {
  let record;
  try { record = JSON.parse(event.data); } catch { return; }
  if (typeof record.seq !== "number") return;
  state.lastSeq = Math.max(state.lastSeq, record.seq);
  emit("line", record);
  if (record.kind === "task_started") $("routing-error").hidden = true;
  if (record.kind === "task_started" && (!state.view || state.view.taskId !== record.task_id)) {
    show(record.task_id, [record]);
    refreshTodos();
    return;
  }
  if (state.view && record.task_id === state.view.taskId) apply(record);
  if (["task_finished", "reply_ready"].includes(record.kind)) refreshTodos();
}

// --- the task as one growing message ---------------------------------------------
function show(taskId, records, todo) {
  state.view = newView(taskId);
  emit("show", { taskId });
  $("message").replaceChildren();
  $("summary").hidden = true;
  $("verification").textContent = "Not verified yet.";
  $("verification").className = "muted";
  $("shot").hidden = true;
  $("shot-caption").hidden = true;
  $("shot-none").hidden = false;
  $("task-title").textContent = todo ? todo.title : taskId;
  for (const record of records) apply(record);
  renderUsage();
  renderControls();
  markShown();
}

function apply(r) {
  const view = state.view;
  if (r.seq <= view.seen) return;  // each line once, also across reconnects
  view.seen = r.seq;
  emit("apply", r);
  switch (r.kind) {
    case "takeover_started": case "takeover_ended": takeoverCard(r); break;
    case "task_started": {  // a task may run again (after an answer): a new run below
      const todo = state.todos.get(r.task_id);
      if (todo) $("task-title").textContent = todo.title;  // the title stays the task's own
      else if ($("task-title").textContent === view.taskId) {
        $("task-title").textContent = String(r.task || "").split("\n")[0];
      }
      if (view.steps.size || (r.run || 1) > 1) {
        const mark = document.createElement("p");
        mark.className = "rerun";
        mark.textContent = `run ${r.run || "again"}`;
        $("message").append(mark);
        if (r.answer) {
          const said = document.createElement("blockquote");
          said.className = "answer";
          said.textContent = `You answered: ${r.answer}`;
          $("message").append(said);
        }
      }
      // the task's totals go on; this run's count from here
      view.base = { input: view.input, output: view.output, cost: view.cost };
      Object.assign(view, { steps: new Map(), step: null });
      view.run = r.run || (view.started ? view.run + 1 : 1);  // (older lines have no run)
      view.started = true;
      view.status = "in_progress";
      $("summary").hidden = true;
      break;
    }
    case "step_started": stepOf(r.step); break;
    case "model_text_delta": {
      const step = currentStep();
      step.source += r.text;
      step.thought.replaceChildren(...Markdown.render(step.source));
      break;
    }
    case "tool_call_streaming": card(r.call_id, r.tool_name, "streaming"); break;
    case "tool_call_started": {
      const c = card(r.call_id, r.tool_name, "running");
      c.args = r.arguments || {};
      c.shown = shownArguments(r);
      c.label.textContent = r.shown_call || r.tool_name;  // click(x=400, y=300), collapsed too
      c.body.textContent = `arguments: ${c.shown}`;
      break;
    }
    case "tool_call_finished": finishCard(r); break;
    case "step_finished": finishStep(r); break;
    case "verification_finished":
      view.input += r.input_tokens || 0;  // the verification call counts in the usage
      view.output += r.output_tokens || 0;
      view.cost += r.cost_usd || 0;
      $("verification").textContent = `${r.done ? "Passed" : "Failed"}: ${r.reason}`;
      $("verification").className = r.done ? "ok" : "error";
      break;
    case "warning": case "model_retry": case "tool_mode_fallback": {
      const p = document.createElement("p");
      p.className = "warning";
      p.textContent = r.message || r.reason || r.kind;
      currentStep().el.append(p);
      break;
    }
    case "task_finished":
      view.status = r.status;
      if (r.task_tokens) {  // the task's totals over all its runs
        view.input = r.task_tokens.input_tokens;
        view.output = r.task_tokens.output_tokens;
        view.cost = r.task_cost_usd;
      } else {
        view.input = view.base.input + (r.input_tokens || 0) || view.input;
        view.output = view.base.output + (r.output_tokens || 0) || view.output;
        view.cost = view.base.cost + (r.cost_usd || 0) || view.cost;
      }
      for (const c of view.cards.values()) if (c.el.dataset.state === "streaming") setState(c, "not run");
      $("summary").textContent = `${said(r.status)}: ${r.summary}`;
      $("summary").hidden = false;
      break;
  }
  renderUsage();
  renderControls();
  followStream();
}

// The stream follows the running step (its newest line kept in sight) until the person
// scrolls up to read; it follows again once they are back at the stream's end.
const Follow = { on: true, lastY: 0, ours: false };
function followStream() {
  const last = $("message").lastElementChild;
  if (!Follow.on || !last || $("app").hidden) return;
  const box = last.getBoundingClientRect();
  if (box.bottom <= window.innerHeight && box.top >= 0) return;  // in sight already
  Follow.ours = true;
  last.scrollIntoView({ block: "end" });
}
window.addEventListener("scroll", () => {
  const y = window.scrollY;
  if (Follow.ours) Follow.ours = false;  // the scroll followStream asked for
  else if (y < Follow.lastY - 4) Follow.on = false;  // the person went up to read
  else if ($("message").getBoundingClientRect().bottom <= window.innerHeight + 40) Follow.on = true;
  Follow.lastY = y;
}, { passive: true });

// A takeover in the stream: who took the screen, for how long, and their note.
function takeoverCard(r) {
  const p = document.createElement("p");
  p.className = "takeover-card";
  p.dataset.kind = r.kind;
  if (r.kind === "takeover_started") {
    p.textContent = `✋ ${r.by} took the screen: Jarvis is paused`;
  } else {
    const how = r.reason === "idle" ? "left it idle, so it came back"
      : r.reason === "closed" ? "closed the panel, so it came back"
      : r.reason === "taken_over" ? `had it taken over by ${r.ended_by}` : "handed it back";
    const held = Math.round(r.held_s || 0);
    p.textContent = `✋ ${r.by} ${how} after ${held} s${r.note ? `: “${r.note}”` : ""}`;
  }
  $("message").append(p);
}

function stepOf(n) {
  const view = state.view;
  if (!view.steps.has(n)) {
    const el = document.createElement("div");
    el.className = "step";
    el.dataset.step = n;
    const head = document.createElement("div");
    head.className = "step-head";
    head.textContent = `step ${n}`;
    const thought = document.createElement("div");
    thought.className = "thought";
    el.append(head, thought);
    $("message").append(el);
    view.steps.set(n, { el, head, thought, source: "" });
  }
  view.step = view.steps.get(n);
  return view.step;
}

function currentStep() { return state.view.step || stepOf(0); }

function card(callId, name, status) {
  const view = state.view;
  let c = view.cards.get(callId);
  if (!c) {
    const el = document.createElement("details");
    el.className = "card";
    el.dataset.call = callId;
    const summary = document.createElement("summary");
    const label = document.createElement("span");
    label.className = "name";
    label.textContent = name;
    const badge = document.createElement("span");
    badge.className = "state";
    const latency = document.createElement("span");
    latency.className = "latency";
    const body = document.createElement("pre");
    body.textContent = "the model is writing this call…";
    summary.append(label, badge, latency);
    el.append(summary, body);
    currentStep().el.append(el);
    c = { el, label, badge, latency, body, name, args: {}, shown: "{}" };
    view.cards.set(callId, c);
  }
  setState(c, status);
  return c;
}

function setState(c, status) {
  c.el.dataset.state = status.replace(" ", "_");
  c.badge.textContent = status;
}

function finishCard(r) {
  // a call cut short by a cancel, a stop or the kill switch is not an error
  const status = r.ok ? "ok" : r.cancelled ? "cancelled" : "error";
  const c = card(r.call_id, r.tool_name, status);
  c.latency.textContent = `${Math.round(r.latency_ms || 0)} ms`;
  const result = r.ok ? `result: ${JSON.stringify(r.data, null, 2)}`
    : r.cancelled ? "cancelled: the task was stopped during this call"
    : `error ${r.error_code}: ${r.error_message}`;
  c.body.textContent = `arguments: ${c.shown}\n${result}`;
  if (status === "error") c.el.open = true;  // errors open, the rest collapsed
  if (r.ok && CLICKS.has(r.tool_name) && "x" in c.args) state.view.click = c.args;
}

function finishStep(r) {
  const view = state.view;
  const step = stepOf(r.step);
  const t = r.timings_ms || {};
  step.head.textContent = `step ${r.step} · ` +
    Object.entries(t).map(([k, v]) => `${k} ${Math.round(v)} ms`).join(", ");
  for (const c of view.cards.values()) if (c.el.dataset.state === "streaming") setState(c, "not run");
  view.input += r.input_tokens || 0;
  view.output += r.output_tokens || 0;
  view.cost = view.base.cost + (r.cost_usd || 0) || view.cost;  // (the run's cost so far)
  if (r.screenshot) showShot(r.screenshot, view.click, r.step);  // the last click so far
}

function showShot(path, click, step) {
  $("shot-caption").textContent = `step ${step}'s screenshot${click ? ", the last click marked" : ""}`;
  $("shot-caption").hidden = false;
  const rel = path.replace(/^memory\/screenshots\//, "");
  const img = $("shot-img");
  const marker = $("click-marker");
  img.onload = () => {
    if (click && img.naturalWidth) {
      marker.style.left = `${(100 * click.x) / img.naturalWidth}%`;
      marker.style.top = `${(100 * click.y) / img.naturalHeight}%`;
      marker.hidden = false;
    } else {
      marker.hidden = true;
    }
  };
  img.src = `/api/screenshots/${rel.split("/").map(encodeURIComponent).join("/")}`;
  $("shot").hidden = false;
  $("shot-none").hidden = true;
}

function renderUsage() {
  const v = state.view;
  if (!v) return;
  let text = `${v.input + v.output} tokens (${v.input} in, ${v.output} out) · ` +
    `$${v.cost.toFixed(4)}`;
  if (v.run > 1) {  // the current run's share
    const used = v.input + v.output - v.base.input - v.base.output;
    text += ` · run ${v.run}: ${used} tokens · $${(v.cost - v.base.cost).toFixed(4)}`;
  }
  $("usage").textContent = text;
}

function renderControls() {
  const v = state.view;
  const todo = v && state.todos.get(v.taskId);
  const status = todo ? todo.status : v ? v.status : "";
  $("task-status").textContent = said(status);
  $("task-status").className = `status ${status}`;
  $("cancel").hidden = !(todo && OPEN.has(todo.status));
  const asks = todo && todo.status === "needs_user";
  $("answer-box").hidden = !asks;
  if (asks) $("question").textContent = todo.summary || "(no question)";
  emit("controls", { asks });
}

// --- todos -----------------------------------------------------------------------
const refreshTodos = quietly(async () => {
  const response = await api("/api/todos");
  if (!response.ok) return;
  const { todos } = await response.json();
  state.todos = new Map(todos.map((t) => [t.id, t]));
  const list = $("todos");
  list.replaceChildren();
  for (const todo of [...todos].reverse()) {
    const li = document.createElement("li");
    li.dataset.id = todo.id;
    li.dataset.status = todo.status;
    const id = document.createElement("span");
    id.className = "id";
    id.textContent = todo.id;
    const title = document.createElement("span");
    title.textContent = todo.title;
    title.style.flex = "1";
    const badge = document.createElement("span");
    badge.className = `status ${todo.status}`;
    badge.textContent = said(todo.status);
    li.append(id, title, badge);
    li.addEventListener("click", () => openTask(todo.id));
    list.append(li);
  }
  markShown();
  renderControls();
});

function markShown() {
  for (const li of $("todos").children) {
    li.classList.toggle("shown", !!state.view && li.dataset.id === state.view.taskId);
  }
}

const openTask = quietly(async (taskId) => {
  const response = await api(`/api/tasks/${encodeURIComponent(taskId)}`);
  if (!response.ok) return;
  const task = await response.json();
  show(task.task_id, task.events || [], task.todo);
});

// --- actions -----------------------------------------------------------------------
$("task-form").addEventListener("submit", quietly(async (event) => {
  event.preventDefault();
  const text = $("task-input").value.trim();
  if (!text) return;
  $("send").disabled = true;
  try {
    const response = await postJSON("/api/messages", { text, channel: "web" });
    if (response.ok) {
      $("task-input").value = "";
      $("send-status").textContent = "Sent; Jarvis will pick it up.";
      setTimeout(refreshTodos, 300);
    } else {
      $("send-status").textContent = `Not sent: ${(await response.json()).detail}`;
    }
  } catch (err) {
    $("send-status").textContent = err instanceof LoggedOut ? "Not sent: you are logged out."
                                                            : `Not sent: ${err.message}`;
  } finally {
    $("send").disabled = false;
  }
}));

$("cancel").addEventListener("click", quietly(async () => {
  if (!state.view) return;
  $("cancel").disabled = true;
  try {
    await postJSON(`/api/tasks/${encodeURIComponent(state.view.taskId)}/cancel`, { by: "web" });
    await refreshTodos();
  } finally {
    $("cancel").disabled = false;
  }
}));

$("answer-form").addEventListener("submit", quietly(async (event) => {
  event.preventDefault();
  const text = $("answer-input").value.trim();
  if (!text || !state.view) return;
  const response = await postJSON(
    `/api/tasks/${encodeURIComponent(state.view.taskId)}/answer`, { text, channel: "web" });
  if (response.ok) {
    $("answer-input").value = "";
    $("answer-box").hidden = true;
    setTimeout(refreshTodos, 300);
  }
}));

// --- the screen picture, enlarged ---------------------------------------------------------
function enlarge(img) {
  if (!img.src) return;
  $("zoom-img").src = img.src;
  $("zoom-img").alt = `${img.alt}, enlarged`;
  $("zoom").showModal();  // Esc, the close button or a click on the picture closes it
}
for (const id of ["shot-img", "live-img"]) $(id).addEventListener("click", () => enlarge($(id)));
$("zoom").addEventListener("click", () => $("zoom").close());

// --- start -----------------------------------------------------------------------------
async function start() {
  // asked first, public: a browser that is not logged in yet sees no 401 in its console
  const session = await (await fetch("/api/session", { credentials: "same-origin" })).json();
  if (!session.logged_in) { showLogin(); return; }
  let health;
  try {
    health = await (await api("/api/health")).json();
  } catch {
    showLogin();  // not logged in yet (no word: nothing went wrong)
    return;
  }
  state.words = (await (await api("/api/task-words")).json()).shown;
  $("app").hidden = false;
  emit("ready");
  state.lastSeq = health.last_seq || 0;
  await refreshTodos();
  let taskId = health.running;
  if (!taskId) {
    const { runs } = await (await api("/api/runs?limit=1")).json();
    taskId = runs.length ? runs[0].task_id : null;
  }
  if (taskId) await openTask(taskId);
  if ($("app").hidden) return;  // logged out meanwhile
  connect();
  setInterval(refreshTodos, 3000);
}

document.addEventListener("DOMContentLoaded", quietly(start));  // after the other panel scripts
