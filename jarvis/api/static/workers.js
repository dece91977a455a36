// The fleet's workers (jarvis serve --fleet): a small list under the todos, from
// GET /api/workers every few seconds once the panel is ready; hidden for a daemon that
// runs its tasks itself. Each line: name, host and display, state, the task it runs.
// Uses $ and api from panel.js.
"use strict";

const Workers = (() => {
  const EVERY_MS = 5000;

  function line(w) {
    const li = document.createElement("li");
    li.dataset.worker = w.name;
    li.dataset.state = w.state;
    const where = `${w.host} ${w.display}${w.size ? ` (${w.size})` : ""}`;
    const doing = w.task ? `runs ${w.task}` : w.state;
    li.textContent = `${w.name} · ${where} · ${doing}`;
    li.title = `last heartbeat ${new Date(w.last_heartbeat).toLocaleTimeString()}`;
    return li;
  }

  async function refresh() {
    let body;
    try {
      body = await (await api("/api/workers")).json();
    } catch {
      return;  // logged out (the login box says so) or the daemon is away: next time
    }
    $("workers-box").hidden = !body.fleet;
    const list = $("workers");
    list.replaceChildren(...body.workers.map(line));
    if (body.fleet && !body.workers.length) {
      const none = document.createElement("li");
      none.className = "muted";
      none.textContent = "no worker has sent a heartbeat lately";
      list.append(none);
    }
  }

  document.addEventListener("jarvis:ready", () => {
    refresh();
    setInterval(refresh, EVERY_MS);
  });
  return { refresh };
})();
