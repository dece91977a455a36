// Approval cards: a held call waits until a person answers it (POST /api/approvals/{id}).
// Cards come from `approval_requested` lines of the stream (any task) and, at load and on
// every reconnect, from GET /api/approvals. `approval_resolved` (any decision) turns a card
// into its outcome, which stays a moment and goes. The task's message keeps one line per
// held call with its outcome. Every text from the model or the call goes in as textContent.
// The reason and the arguments come rendered by the daemon (shown_reason, shown_arguments:
// characters a person cannot see spelled out, the same text as the TUI's card).
// Uses $, api, postJSON and currentStep from panel.js.
"use strict";

const Approvals = (() => {
  const LINGER_MS = 5000;
  const OUTCOMES = {
    allow_once: "Allowed once",
    allow_task: "Allowed for this task",
    deny: "Denied",
    timeout: "Not answered in time: denied",
    cancelled: "Cancelled: the task stopped",
    auto: "Allowed by the settings",
    gone: "No longer waiting (the daemon restarted, or its task ended)",
  };
  const cards = new Map();    // approval_id -> the card's parts, while it waits
  const resolved = new Set(); // answered ids: a list fetched earlier does not bring them back
  const lingering = new Map(); // approval_id -> a card closed as "gone", until it goes
  let ticker = null;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function outcome(r) {
    const said = OUTCOMES[r.decision] || r.decision;
    return r.note ? `${said}: ${r.note}` : said;
  }

  function clock(seconds) {
    const m = Math.floor(seconds / 60);
    return `${m}:${String(seconds % 60).padStart(2, "0")}`;
  }

  function add(request) {
    const id = request.approval_id;
    if (typeof id !== "string" || cards.has(id) || resolved.has(id)) return;
    const root = el("article", "approval");
    root.dataset.id = id;
    root.dataset.state = "pending";
    const head = el("h3", "", "Jarvis waits for your approval");
    if (request.task_id) head.append(" ", el("span", "task", request.task_id));
    const reason = el("p", "reason", request.shown_reason ?? request.reason ?? "");
    const call = el("p", "call", "call: ");
    call.append(el("code", "tool", request.tool_name || ""));
    const args = el("pre", "args", shownArguments(request));
    root.append(head, reason, call, args);
    if (request.screenshot) root.append(shot(id));
    else root.append(el("p", "muted", "No screenshot was taken."));
    const countdown = el("p", "countdown");
    const form = el("form", "approval-form");
    const label = el("label", "", "Note to Jarvis (sent with the answer; say why when you deny)");
    const note = el("input", "note");
    Object.assign(note, { type: "text", maxLength: 2000, autocomplete: "off" });
    label.append(note);
    const actions = el("div", "actions");
    const buttons = [["allow_once", "Allow once"], ["allow_task", "Allow for this task"],
                     ["deny", "Deny"]].map(([decision, text]) => {
      const button = el("button", `answer ${decision}`, text);
      button.type = "button";
      button.dataset.decision = decision;
      return button;
    });
    actions.append(...buttons);
    form.append(label, actions);
    const error = el("p", "approval-error error");
    error.hidden = true;
    error.setAttribute("role", "alert");
    const result = el("p", "outcome");
    result.hidden = true;
    root.append(countdown, form, error, result);
    const card = { id, root, countdown, form, note, buttons, error, result,
                   expiresAt: Number(request.expires_at) || 0, addedAt: Date.now() };
    for (const button of buttons) {
      button.addEventListener("click", () => answer(card, button.dataset.decision));
    }
    form.addEventListener("submit", (event) => event.preventDefault());
    cards.set(id, card);
    $("approvals").append(root);
    tick();
    if (ticker === null) ticker = setInterval(tick, 1000);
  }

  function shot(id) {
    const url = `/api/approvals/${encodeURIComponent(id)}/screenshot`;
    const link = el("a", "approval-shot");
    Object.assign(link, { href: url, target: "_blank", rel: "noopener" });
    const img = el("img");
    img.alt = "the screen when the call was held";
    img.addEventListener("error", () => link.replaceWith(el("p", "muted", "The screenshot is not available.")));
    img.src = url;
    link.append(img);
    return link;
  }

  async function answer(card, decision) {
    setBusy(card, true);
    card.error.hidden = true;
    let response;
    try {
      response = await postJSON(`/api/approvals/${encodeURIComponent(card.id)}`,
                                { decision, note: card.note.value, by: "web" });
    } catch (err) {
      fail(card, `Not sent: ${err.message}`, true);
      return;
    }
    if (response.ok) {  // the approval_resolved line shows the outcome
      card.root.dataset.state = "sent";
      return;
    }
    let detail = `HTTP ${response.status}`;
    try {
      const body = await response.json();
      if (body.detail) detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    } catch { /* not JSON: keep the status */ }
    if (response.status === 404) fail(card, `Already answered or expired: ${detail}`, false);
    else fail(card, `Not accepted: ${detail}`, true);
  }

  function setBusy(card, busy) {
    for (const button of card.buttons) button.disabled = busy;
    card.note.disabled = busy;
  }

  function fail(card, text, again) {
    card.error.textContent = text;
    card.error.hidden = false;
    card.root.dataset.state = again ? "pending" : "gone";
    setBusy(card, !again);
  }

  function resolve(r) {
    resolved.add(r.approval_id);
    const card = cards.get(r.approval_id) || lingering.get(r.approval_id);
    if (!card) return;
    cards.delete(r.approval_id);
    // "gone" is a guess from the list; the journal's real outcome may still come and wins
    if (r.decision === "gone") lingering.set(r.approval_id, card);
    else lingering.delete(r.approval_id);
    card.root.dataset.state = "resolved";
    card.root.dataset.decision = r.decision;
    card.form.remove();
    card.countdown.remove();
    card.result.textContent = outcome(r);
    card.result.hidden = false;
    clearTimeout(card.goes);
    card.goes = setTimeout(() => {
      card.root.remove();
      lingering.delete(r.approval_id);
    }, LINGER_MS);
  }

  function tick() {
    const now = Date.now() / 1000;
    for (const card of cards.values()) {
      const left = Math.max(0, Math.ceil(card.expiresAt - now));
      card.countdown.dataset.left = String(left);
      card.countdown.textContent = left > 0
        ? `Answer within ${clock(left)}; unanswered, it counts as denied.`
        : "Time is up: unanswered, it counts as denied.";
    }
    if (!cards.size && ticker !== null) {
      clearInterval(ticker);
      ticker = null;
    }
  }

  async function sync() {
    const asked = Date.now();
    let response;
    try {
      response = await api("/api/approvals");
    } catch {
      return;  // logged out: the login form is shown
    }
    if (!response.ok) return;
    const { pending } = await response.json();
    const waiting = new Set();
    for (const request of pending || []) {
      add(request);
      waiting.add(request.approval_id);
    }
    // a card the daemon no longer holds (and that was there before we asked) is closed
    for (const [id, card] of [...cards]) {
      if (!waiting.has(id) && card.addedAt < asked) resolve({ approval_id: id, decision: "gone" });
    }
  }

  // The task's own message: a line per held call, completed by its outcome.
  function history(r) {
    if (r.kind === "approval_requested") {
      const line = el("p", "held", `held for approval: ${r.shown_call || r.tool_name}: ` +
                      `${r.shown_reason ?? r.reason}`);
      line.dataset.approval = r.approval_id;
      currentStep().el.append(line);
    } else if (r.kind === "approval_resolved") {
      for (const line of $("message").querySelectorAll("p.held")) {
        if (line.dataset.approval !== r.approval_id) continue;
        line.textContent += ` · ${outcome(r)}`;
        line.dataset.decision = r.decision;
      }
    }
  }

  document.addEventListener("jarvis:line", (event) => {
    const r = event.detail;
    if (r.kind === "approval_requested") add(r);
    else if (r.kind === "approval_resolved") resolve(r);
  });
  document.addEventListener("jarvis:apply", (event) => history(event.detail));
  document.addEventListener("jarvis:ready", sync);
  document.addEventListener("jarvis:open", sync);
  return { cards, sync };
})();
