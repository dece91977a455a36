// The schedules (jarvis schedule add ...): a small list under the todos, from
// GET /api/schedules every 30 s once the panel is ready; hidden while there are none.
// Each line: id, when (zone), the next run in the schedule's own zone, the task's first
// line; an entry of schedules.md that cannot be read is one line of its own.
// Uses $ and api from panel.js.
"use strict";

const Schedules = (() => {
  const EVERY_MS = 30000;

  function nextRun(s) {
    if (s.next_run === null) return "paused";
    // "2026-11-30T09:00:00+01:00": the wall-clock time where the schedule lives
    return `next ${s.next_run.slice(0, 10)} ${s.next_run.slice(11, 16)}`;
  }

  function line(s) {
    const li = document.createElement("li");
    li.dataset.schedule = s.id;
    const first = s.text.split("\n", 1)[0];
    const next = document.createElement("span");
    next.className = "next-run";
    next.textContent = nextRun(s);
    li.append(`${s.id} · ${s.when} (${s.tz}) · `, next, ` · ${first}`);
    li.title = `catch_up: ${s.catch_up} · answer to: ${s.answer_to}`;
    return li;
  }

  function problem(text) {
    const li = document.createElement("li");
    li.className = "error";
    li.textContent = `unreadable, kept as it is: ${text}`;
    return li;
  }

  async function refresh() {
    let body;
    try {
      body = await (await api("/api/schedules")).json();
    } catch {
      return;  // logged out (the login box says so) or the daemon is away: next time
    }
    $("schedules-box").hidden = !body.schedules.length && !body.problems.length;
    $("schedules").replaceChildren(...body.schedules.map(line), ...body.problems.map(problem));
  }

  document.addEventListener("jarvis:ready", () => {
    refresh();
    setInterval(refresh, EVERY_MS);
  });
  return { refresh };
})();
