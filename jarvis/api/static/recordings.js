// Teach by showing: the Record button. POST /api/recordings {name} starts recording a
// person on the daemon's desktop, POST /api/recordings/stop ends it (the skill file is
// written and kept in memory); the list under it is GET /api/recordings, and a click on a
// recording shows its steps in words with their target crops. Uses $, api, postJSON and
// quietly from panel.js.
"use strict";

const Recordings = (() => {
  function say(text, error = false) {
    const status = $("rec-status");
    status.textContent = text;
    status.classList.toggle("error", error);
  }

  function running(now) {
    const box = $("recording-box");
    box.dataset.state = now ? "recording" : "idle";
    $("rec-start").hidden = !!now;
    $("rec-name").disabled = !!now;
    $("rec-stop").hidden = !now;
    if (now) say(`Recording "${now.name}" on ${now.display}: do the task, then Stop.`);
  }

  function entry(r) {
    const li = document.createElement("li");
    li.dataset.slug = r.slug;
    const link = document.createElement("button");
    link.type = "button";
    link.className = "link";
    link.textContent = r.name;
    link.addEventListener("click", quietly(() => show(r.slug)));
    li.append(link, ` · ${r.steps} steps · ${r.created.slice(0, 16).replace("T", " ")}`);
    return li;
  }

  async function show(slug) {
    const response = await api(`/api/recordings/${encodeURIComponent(slug)}`);
    if (!response.ok) return;
    const body = await response.json();
    const view = $("rec-skill");
    const title = document.createElement("h3");
    title.textContent = body.name;
    const steps = document.createElement("ol");
    for (const s of body.steps) {
      const li = document.createElement("li");
      li.textContent = s.words.replace(/^\d+\.\s*/, "");
      if (s.crop) {
        const img = document.createElement("img");
        img.src = `/api/recordings/${encodeURIComponent(slug)}/files/${encodeURIComponent(s.crop)}`;
        img.alt = `the target of step ${s.number}`;
        li.append(img);
      }
      steps.append(li);
    }
    view.replaceChildren(title, steps);
    view.dataset.slug = slug;
    view.hidden = false;
  }

  async function refresh() {
    let body;
    try {
      body = await (await api("/api/recordings")).json();
    } catch {
      return;
    }
    running(body.recording);
    $("recordings").replaceChildren(...body.recordings.map(entry));
  }

  async function start(event) {
    event.preventDefault();
    say("Starting…");
    const response = await postJSON("/api/recordings", { name: $("rec-name").value.trim() });
    const body = await response.json();
    if (!response.ok) { say(`Not recording: ${body.detail}`, true); return; }
    running(body);
  }

  async function stop() {
    say("Stopping: writing the skill…");
    const response = await postJSON("/api/recordings/stop", {});
    const body = await response.json();
    running(null);
    if (!response.ok) { say(`Not stopped: ${body.detail}`, true); return; }
    say(body.steps ? `${body.steps} steps in ${body.skill}; ${body.memory}` : body.memory);
    await refresh();
    if (body.steps) await show(body.slug);
  }

  document.addEventListener("jarvis:ready", () => {
    $("rec-form").addEventListener("submit", quietly(start));
    $("rec-stop").addEventListener("click", quietly(stop));
    refresh();
  });
  return { refresh, show };
})();
