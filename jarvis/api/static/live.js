// The live screen: while the shown task runs, the display the agent works on, about once a
// second, from GET /api/screen/live?task_id= (the daemon's display now; in a fleet the
// screen of the worker running the shown task). A fleet task on a worker of another machine
// comes as its last step's screenshot, marked x-jarvis-screen: last-step, and is captioned
// so (not live). When that answers anything but 200 (nothing to capture), the latest step's
// screenshot from /api/screen/latest.
// Frames come as blobs (img-src allows blob:; data: is for the noVNC view's JPEG tiles). Uses $, api and state from panel.js.
"use strict";

const Live = (() => {
  const PERIOD_MS = 1000;
  function sources() {
    const live = `/api/screen/live?task_id=${encodeURIComponent(state.view.taskId)}`;
    return [["live", live], ["latest", "/api/screen/latest"]];
  }
  let busy = false;
  let shown = null;  // the object URL on screen

  function running() {
    return !!state.view && state.view.status === "in_progress";
  }

  async function frame() {
    let why = "";
    for (const [source, path] of sources()) {
      const response = await api(path);
      if (response.ok) {
        const h = response.headers;
        const shown = source === "live" && h.get("x-jarvis-screen") === "last-step" ? "last-step" : source;
        const whose = { worker: h.get("x-jarvis-worker") || "", step: h.get("x-jarvis-step") || "" };
        return { source: shown, why, whose, blob: await response.blob() };
      }
      if (!why) {
        try { why = (await response.json()).detail || ""; } catch { why = `HTTP ${response.status}`; }
      }
    }
    return { source: "none", why, blob: null };
  }

  function put(got) {
    const img = $("live-img");
    const caption = $("live-caption");
    const time = new Date().toLocaleTimeString();
    img.dataset.source = got.source;
    const on = got.whose && got.whose.worker ? ` on worker ${got.whose.worker}` : "";
    if (got.source === "live") caption.textContent = `live${on} · ${time}`;
    else if (got.source === "last-step") caption.textContent = `last step's picture (step ${got.whose.step}${on}), not live`;
    else if (got.source === "latest") caption.textContent = `latest step (no live display: ${got.why})`;
    else caption.textContent = `no screen to show: ${got.why}`;
    if (!got.blob) return;
    const url = URL.createObjectURL(got.blob);
    const old = shown;
    shown = url;
    img.src = url;
    if (old) URL.revokeObjectURL(old);
  }

  async function tick() {
    if (!running() || document.body.dataset.vnc === "on") {  // takeover.js shows it live
      $("live").hidden = true;
      return;
    }
    if (busy || document.hidden) return;
    busy = true;
    try {
      put(await frame());
      $("live").hidden = !running();
    } catch {
      // logged out (the login form is shown) or the daemon is away: try again next tick
    } finally {
      busy = false;
    }
  }

  document.addEventListener("jarvis:ready", () => setInterval(tick, PERIOD_MS));
  document.addEventListener("jarvis:apply", (event) => {
    if (event.detail.kind === "task_started") setTimeout(tick, 0);
    else if (event.detail.kind === "task_finished") $("live").hidden = true;  // not live now
  });
  return { tick };
})();
