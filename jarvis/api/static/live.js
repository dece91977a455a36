// The live screen: while the shown task runs, the display the agent works on, about once a
// second, from GET /api/screen/live (the daemon's display now). When that answers anything
// but 200 (no display to capture), the latest step's screenshot from /api/screen/latest.
// Frames come as blobs (img-src allows blob:; data: is for the noVNC view's JPEG tiles). Uses $, api and state from panel.js.
"use strict";

const Live = (() => {
  const PERIOD_MS = 1000;
  const SOURCES = [["live", "/api/screen/live"], ["latest", "/api/screen/latest"]];
  let busy = false;
  let shown = null;  // the object URL on screen

  function running() {
    return !!state.view && state.view.status === "running";
  }

  async function frame() {
    let why = "";
    for (const [source, path] of SOURCES) {
      const response = await api(path);
      if (response.ok) return { source, why, blob: await response.blob() };
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
    if (got.source === "live") caption.textContent = `live · ${time}`;
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
