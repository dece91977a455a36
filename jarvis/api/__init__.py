"""The control API of ``jarvis serve``: HTTP on 127.0.0.1:8765 (FastAPI on uvicorn, in the
gateway's asyncio loop), the live event stream, and the web panel at ``/``.

Every client (the TUI, the web panel, scripts) uses only this API. The wire format is a
contract (shared/DESIGN.md, section 5); it changes only together with its clients.

Addresses: ``--http HOST:PORT`` (default ``api.http`` = ``127.0.0.1:8765``; ``:PORT`` keeps
loopback; a host other than loopback only when named, with a warning), ``--http off``,
``--unix-socket PATH`` (mode 0600; send ``Host: localhost``).

Auth (:mod:`jarvis.api.auth`): ``Authorization: Bearer TOKEN`` on every request, TOKEN
from ``DATA/config/api_token`` (made 0600 at the first start). The browser: the one-time
link ``/login?code=...`` printed by ``serve``, or ``POST /api/login {"token"}``, sets the
HttpOnly, SameSite=Strict cookie ``jarvis_session``. ``Host`` must be a loopback name with
the port (or the named host); a foreign ``Origin`` or ``Sec-Fetch-Site: cross-site`` is
403; a cookie-only request that changes something must carry a matching ``Origin``.
Errors are JSON ``{"detail": "..."}``: 401 no or wrong token, 403 refused, 404 unknown,
409 the task's state does not allow it, 422 a bad body.

Endpoints (JSON unless said otherwise)::

    POST /api/messages {text, channel = api, priority?, reply_to?}
         -> 201 {message_id, channel, task_id: null}
         the message goes into messages/inbox.md and through the router like any other;
         channel: tui, web, api, a2a, mcp, or a bridge's name (a ``channels.NAME`` block);
         422 for an unknown one or one that takes its messages itself (inbox, email, a
         ``jarvis.channels`` plugin), 429 (Retry-After) over its
         ``channels.NAME.rate_limit``; the task's ``reply_ready`` event carries the channel
         and ``reply_to``
    GET  /api/todos -> {todos: [Todo]}   (todos.md entries: id, title, status, priority,
         created, started, completed, source, message_ids, reply_to, parent, summary,
         notes, description)
    GET  /api/tasks/{id}?events=true -> {task_id, todo, run, steps, verification,
         last_seq, events}   run = run.json (jarvis.runs.run_info.RunInfo: the task's
         totals over all its runs, ``ending`` in words, ``runs`` one entry per run with
         the ``answer`` that started it); steps of every run = [{step, run, thought,
         tool_calls: [{call_id, tool_name, state, arguments, error_code,
         error_message, latency_ms, data}], timings_ms, input_tokens, output_tokens,
         cost_usd, screenshot, finished}]; events = the task's journal lines
    POST /api/tasks/{id}/cancel {by: tui|web|api|mcp = api}
         -> 202 {Todo}   (the task, status cancelled; 409 when ended)
    POST /api/tasks/{id}/answer {text, channel: tui|web|api|mcp = api}
         -> 202 {message_id, channel, task_id}
         an inbox message addressed to the task (header ``answers:T003``); the router
         merges it into the task, which runs again (409 when the task is not open)
    GET  /api/events   Server-Sent Events, see below
    GET  /api/runs?limit=50&cursor=C -> {runs: [RunSummary], next}   newest first, from
         the run index (jarvis.runs.listing: no run.json is opened); a run = task_id, task,
         channel, model, started, ended, status, ending, summary, verdict, stopped_by,
         steps, tokens, cost_usd, run_count, first_seq, last_seq, folder; next = the cursor
         of the page of older runs (null after the oldest); 400 for a cursor not given here
    GET  /api/workers -> {fleet, workers: [{name, host, display, size, version, state,
         task, last_heartbeat, live}]}   the fleet's live workers (``serve --fleet``);
         empty and fleet false for a daemon that runs its tasks itself; ``live``: its
         screen can be watched here (it runs on this machine)
    GET  /api/workers/{name}/live -> {worker, host, display, live}   404 no such worker,
         409 its live view is not reachable from here (jarvis.api.fleet_screens)
    GET  /api/screenshots/{path} -> image   path relative to DATA/memory/screenshots/
         (as in a step's ``screenshot`` minus that prefix); anything else is 404
    GET  /api/screen/latest -> image   the running (or last) task's latest step screenshot
    GET  /api/screen/live[?task_id=] -> image/jpeg   the daemon's display now (its DISPLAY:
         under ``serve --sandbox`` the private one), scaled like the model's screenshots;
         503 {detail} when no display can be captured (jarvis.api.live). In a fleet: the
         display of the worker running the watched task (or task_id) when it is on this
         machine, else that task's last step screenshot (PNG or JPEG) with the header
         ``x-jarvis-screen: last-step`` (``live`` otherwise; x-jarvis-worker, x-jarvis-task,
         x-jarvis-step say whose); 404/409 {detail} when nothing can be shown, e.g. no task
         runs and the coordinator has no display (jarvis.api.fleet_live)
    GET  /api/health -> {status, version, pid, ready, running, last_seq}
    GET  /api/task-words -> {statuses, shown}   the status words of every face and how a
         person reads each (jarvis.task_words)
    GET  /api/approvals -> {pending: [approval_requested event]}   (jarvis.api.approvals)
    POST /api/approvals/{id} {decision: allow_once|allow_task|deny, note?}
         -> 200 {approval_id, decision}   (404 unknown or already answered)
    GET  /api/approvals/{id}/screenshot -> image   the screen saved with the request
         (DATA/approvals/ID.png|jpg; id as the gate makes it, ``a-`` + 12 hex digits);
         404 for anything else
    POST /api/stop {by: cli|web|tui|api = api} -> 202 {stopping: bool, by}
         cancels the running task now, recorded in task_finished's ``stopped_by``
    GET  /api/recordings -> {recording, recordings}; POST /api/recordings {name} -> 201;
         POST /api/recordings/stop -> {name, slug, steps, skill, memory};
         GET /api/recordings/{slug}, GET /api/recordings/{slug}/files/{file}: the Record
         button (jarvis.api.recordings; 409 while a task acts on the desktop)
    GET  /api/takeover, POST /api/takeover {by, task_id?}, POST /api/handback {note?},
         WS /api/vnc/{display}: the live view and takeover (jarvis.api.takeover);
         WS /api/vnc/worker/{name}: a fleet worker's screen (jarvis.api.fleet_screens)
    POST /api/login {token} -> 204 + cookie;  POST /api/logout -> 204
    GET  /docs, /openapi.json   OpenAPI (behind the token too): every route's response
         model or media type; /docs is Swagger UI from ``static/swagger/`` (no CDN)

The event stream, ``GET /api/events``: each event is one journal line
(:mod:`jarvis.runs.journal`)::

    id: 42
    event: tool_call_started
    data: {"seq": 42, "ts": 1764000000.25, "kind": "tool_call_started", "task_id": "T003",
           "call_id": "toolu_1", "tool_name": "click", "arguments": {"x": 10, "y": 20}}

(``data`` is one line.) ``id`` is the seq (unique, increasing across the data dir),
``event`` the kind. ``?after=SEQ`` or a ``Last-Event-ID: SEQ`` header (the header wins)
replays every line after SEQ from the journal, then goes on live: a reconnect loses
nothing. Without either, a client gets the running task's lines so far, then live ones
(``/api/health``'s ``last_seq`` is the cursor for "from now on"). Kinds: task_started,
step_started, model_text_delta (coalesced, at most ~20 a second), tool_call_streaming
(the model began writing a call), tool_call_started, tool_call_finished, step_finished
(with ``screenshot``), verification_finished, warning, model_retry, tool_mode_fallback,
task_finished (with the task's tokens and cost, and ``stopped_by`` when cancelled),
reply_ready, approval_requested, approval_resolved, budget_used, takeover_started,
takeover_ended (jarvis.events). A
client that falls behind (more than ``api.queue_size`` lines queued) gets ``event: gap`` with
``data: {"kind": "gap", "after": SEQ}`` and no id, then the lines it missed, read from the
journal, then live ones again. ``retry: 1000`` starts the stream; ``: ping`` comments come
every ``api.heartbeat_s`` when idle. The agent never waits for a client.

Modules: :mod:`~jarvis.api.settings` (``api`` settings, ``--http`` parsing),
:mod:`~jarvis.api.auth`, :mod:`~jarvis.api.stream` (hub and SSE),
:mod:`~jarvis.api.routes`, :mod:`~jarvis.api.models` (response bodies),
:mod:`~jarvis.api.views`, :mod:`~jarvis.api.live`, :mod:`~jarvis.api.app`,
:mod:`~jarvis.api.server` (uvicorn in the gateway's loop), :mod:`~jarvis.api.takeover`
and :mod:`~jarvis.api.vnc_relay` (the live view). The routes reach the daemon only
through its service, :class:`jarvis.gateway.service.DaemonService`;
``static/`` is the panel (``panel.js``, with ``approvals.js``, ``budget.js`` and ``live.js``
following the stream through DOM events; ``takeover.js``, an ES module, with the noVNC
client in ``novnc/``).
"""
