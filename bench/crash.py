"""Crash bench for ``jarvis serve``: ``kill -9`` at random moments while messages arrive.

Each round starts ``jarvis serve`` on one data dir, waits a random moment (most rounds
until the daemon holds its lock and then up to ``--max-after`` seconds more; some rounds
only a few milliseconds, to hit start-up) and kills it with SIGKILL. Meanwhile a feeder
thread keeps adding messages the two ways people do: ``MessageQueue.append`` (what
``jarvis inbox add`` does) and markdown files dropped into ``messages/drop/``. After the
rounds, a last clean ``jarvis serve --once`` drains everything. Then it checks:

- ``lost``: messages the feeder added that are nowhere (inbox, processing or archive);
- ``duplicates``: messages found in more than one place or archived twice, messages that
  became more than one task, and tasks that ran again after their completion was written
  (the step answer's nonce ``#N`` in the task's summary is the last run of that task);
- ``parse_errors``: unreadable sections in inbox.md, processing.md, the archives, todos.md.

The model is a loopback :class:`tests.fake_model.FakeModel`: routing answers ``new``, every
step calls ``finished`` and every verification says done; requests are told apart by their
content. The desktop is a private Xvfb.

By default each ``jarvis serve`` is forked from a warm "zygote" process that has imported
Jarvis once (the same ``jarvis.cli.main(["serve", ...])`` in a fresh child, without 2-8 s
of imports per round); ``--spawn`` starts a new interpreter per round instead.

Prints one JSON object. Beside the counts above: ``interrupted``, runs found in progress
at a start (put back to pending); ``repaired``, messages archived at a start because their
task had ended (a kill between the todos.md and the archive write); ``reruns``, tasks whose
model step was asked more than once (runs are at least once); ``verify_repeats``, tasks
verified more than once: killed while the verification was in flight, before its verdict
was written, so the run was repeated (not a second completion: that is ``duplicates``).

    python bench/crash.py [--rounds 20] [--seed 1] [--max-after 1.5] [--rate 1.5] [--spawn]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MARK = re.compile(r"bench message (\d{5})")
NONCE = re.compile(r"#(\d+)")
LOG_EVENT = re.compile(r"jarvis\.gateway\.worker: task (T\d+)( started|: completed)")
KEY = "bench-crash-key"
SERVE_ARGS = ["serve", "--poll", "0.3", "--compress-every", "0"]


# --- the scripted model -------------------------------------------------------------
class Script:
    """Answers by request kind and records, per message marker, what was asked."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.nonces = itertools.count(1)
        self.steps: dict[str, list[int]] = defaultdict(list)
        self.verifies: Counter[str] = Counter()
        self.routes: Counter[str] = Counter()

    def __call__(self, request: Any) -> Any:
        from tests.fake_model import Reply, call

        text = request.all_text()
        if "route incoming messages" in text:
            with self.lock:
                self.routes[_marker(text, "<<<message")] += 1
            return Reply(text='{"action": "new", "title": "bench task", "priority": "normal"}')
        if "You verify computer tasks" in text:
            with self.lock:
                self.verifies[_marker(text, "Task:")] += 1
            return Reply(text='{"done": true, "reason": "the bench says so"}')
        marker = _marker(text, "# Task")
        with self.lock:
            nonce = next(self.nonces)
            self.steps[marker].append(nonce)
        summary = f"done {marker} #{nonce}"
        return Reply(text="Thought: done.", tool_calls=[call("finished", summary=summary)])


def _marker(text: str, anchor: str) -> str:
    found = MARK.search(text, max(0, text.find(anchor)))
    return found.group(1) if found else "?"


# --- the feeder ---------------------------------------------------------------------
class Feeder(threading.Thread):
    """Adds numbered messages at ``rate`` per second; every third as a drop file."""

    def __init__(self, data_dir: Path, rate: float, seed: int) -> None:
        super().__init__(name="feeder", daemon=True)
        from jarvis.gateway.queue import MessageQueue

        self.queue = MessageQueue(data_dir)
        self.rate = rate
        self.random = random.Random(seed)
        self.added: list[str] = []
        self.halt = threading.Event()

    def run(self) -> None:
        for number in itertools.count():
            if self.halt.wait(self.random.expovariate(self.rate)):
                return
            self.add(number)

    def add(self, number: int) -> None:
        marker = f"{number:05d}"
        text = f"bench message {marker}: please do thing {number}"
        if number % 3 == 2:
            drop = self.queue.drop_dir
            drop.mkdir(parents=True, exist_ok=True)
            temp = drop / f".bench-{marker}.tmp"
            temp.write_text(f"---\nsender: feeder\n---\n{text}\n", encoding="utf-8")
            os.replace(temp, drop / f"bench-{marker}.md")
        else:
            self.queue.append(text, sender="feeder", channel="cli")
        self.added.append(marker)


# --- starting and killing serve -----------------------------------------------------
class Zygote:
    """A warm process that forks ``jarvis serve`` children on request."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--zygote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=ROOT,
            text=True,
        )
        ready = self._read()
        if not ready.get("ready"):
            raise RuntimeError(f"zygote failed: {ready}")

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the zygote died")
        result: dict[str, Any] = json.loads(line)
        return result

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def start(self, argv: list[str], log: Path) -> int:
        return int(self._ask({"argv": argv, "log": str(log)})["pid"])

    def wait(self, pid: int) -> int:
        return int(self._ask({"wait": pid})["code"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


class Spawner:
    """A new interpreter per ``jarvis serve`` (slow, but nothing shared)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    def start(self, argv: list[str], log: Path) -> int:
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "jarvis", *argv],
                env=self.env,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.procs[proc.pid] = proc
        return proc.pid

    def wait(self, pid: int) -> int:
        return self.procs.pop(pid).wait()

    def close(self) -> None:
        pass


def zygote_main() -> int:
    """Import Jarvis once, then fork a child per request read from stdin."""
    import jarvis.agent.factory
    import jarvis.cli
    import jarvis.gateway.channels.inbox
    import jarvis.gateway.gateway
    import jarvis.gateway.router

    if threading.active_count() != 1 or "pyautogui" in sys.modules:
        print(json.dumps({"ready": False, "why": "threads or a display connection"}), flush=True)
        return 1
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if "wait" in request:
            _, status = os.waitpid(request["wait"], 0)
            print(json.dumps({"code": os.waitstatus_to_exitcode(status)}), flush=True)
            continue
        pid = os.fork()
        if pid == 0:  # the child: become `jarvis serve`
            code = 1
            try:
                _child_io(request["log"])
                code = jarvis.cli.main(request["argv"])
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        print(json.dumps({"pid": pid}), flush=True)
    return 0


def _child_io(log: str) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.close(null)
    random.seed()


def wait_for_lock(path: Path, pid: int, timeout: float) -> bool:
    """Until ``serve.lock`` names ``pid`` (the daemon is up), or the timeout."""
    needle = f'"pid": {pid},'
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if needle in path.read_text(encoding="utf-8"):
                return True
        time.sleep(0.005)
    return False


# --- checking -----------------------------------------------------------------------
def check(data_dir: Path, added: list[str], script: Script) -> dict[str, Any]:
    from jarvis.gateway.message_format import parse_messages
    from jarvis.gateway.todo_format import parse_todos

    messages = data_dir / "messages"
    places: dict[str, list[str]] = defaultdict(list)
    parse_errors = 0
    files = [messages / "inbox.md", messages / "processing.md"]
    files += sorted((messages / "archive").glob("????-??-??.md"))
    for path in files:
        if not path.exists():
            continue
        doc = parse_messages(path.read_text(encoding="utf-8"))
        parse_errors += len(doc.malformed())
        for message in doc.entries():
            for marker in MARK.findall(message.text):
                places[marker].append(path.name)
    todos_doc = parse_todos((data_dir / "todos.md").read_text(encoding="utf-8"))
    parse_errors += len(todos_doc.malformed())
    entries = list(todos_doc.entries())
    # ended tasks beyond todos.keep_ended (50) move to the monthly archive: count them there
    for path in sorted((data_dir / "todos" / "archive").glob("????-??.md")):
        archived = parse_todos(path.read_text(encoding="utf-8"))
        parse_errors += len(archived.malformed())
        entries += archived.entries()
    tasks: dict[str, list[Any]] = defaultdict(list)
    for todo in entries:
        for marker in set(MARK.findall(todo.description)):
            tasks[marker].append(todo)

    lost = [m for m in added if not places.get(m)]
    duplicates: list[str] = []
    for marker in added:
        if len(places.get(marker, [])) > 1 or len(tasks.get(marker, [])) > 1:
            duplicates.append(marker)
            continue
        for todo in tasks.get(marker, []):
            nonce = NONCE.search(todo.summary or "")
            steps = script.steps.get(marker, [])
            if todo.status == "completed" and nonce and steps and max(steps) > int(nonce[1]):
                duplicates.append(marker)  # it ran again after its completion was written
    statuses = Counter(t.status for ts in tasks.values() for t in ts)
    logs = "".join(p.read_text(errors="replace") for p in sorted((data_dir / "logs").glob("*.log")))
    twice = completed_twice(logs)
    for marker in added:
        if marker not in duplicates and any(t.id in twice for t in tasks.get(marker, [])):
            duplicates.append(marker)
    waiting = sum(1 for m in added if any(p in ("inbox.md", "processing.md") for p in places[m]))
    return {
        "lost": len(lost),
        "duplicates": len(duplicates),
        "parse_errors": parse_errors,
        "completed": statuses.get("completed", 0),
        "not_completed": sum(n for s, n in statuses.items() if s != "completed"),
        "waiting_after": waiting,
        "interrupted": sum(len([n for n in t.notes if "interrupted" in n]) for t in entries),
        "repaired": logs.count("archived now"),
        "reruns": sum(1 for m in added if len(script.steps.get(m, [])) > 1),
        "verify_repeats": sum(1 for m in added if script.verifies.get(m, 0) > 1),
        "examples": {"lost": lost[:5], "duplicates": duplicates[:5]},
    }


def completed_twice(logs: str) -> set[str]:
    """Tasks the worker's log shows completed twice, or started again after completing
    (the daemons run one after another, so the log's order is the order of events)."""
    done: Counter[str] = Counter()
    twice: set[str] = set()
    for todo_id, event in LOG_EVENT.findall(logs):
        if done[todo_id]:
            twice.add(todo_id)
        if event == ": completed":
            done[todo_id] += 1
    return twice


# --- the bench ----------------------------------------------------------------------
def bench(args: argparse.Namespace) -> dict[str, Any]:
    from tests.fake_model import FakeModel
    from tests.xserver import start_xvfb

    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="jarvis-crash-"))
    data_dir = work / "data"
    log = work / "serve.log"
    script = Script()
    model = FakeModel().start()
    model.set_default(script)
    _quiet_resets(model)
    started = time.monotonic()
    kills = startup_kills = early_exits = 0
    try:
        with start_xvfb(640, 480) as xserver:
            env = {
                **os.environ,
                **xserver.env(),
                "ANTHROPIC_API_KEY": KEY,
                "ANTHROPIC_BASE_URL": model.anthropic_base_url,
                "JARVIS_PROVIDER": "anthropic",
                "JARVIS_MAX_RETRIES": "0",
                "JARVIS_LONG_TERM_MEMORY": "false",
                "JARVIS_SETTLE_CEILING_MS": "300",
                "ANONYMIZED_TELEMETRY": "False",
                "PYTHONPATH": str(ROOT),
            }
            launcher: Zygote | Spawner = Spawner(env) if args.spawn else Zygote(env)
            feeder = Feeder(data_dir, args.rate, args.seed)
            argv = [*SERVE_ARGS, "--data-dir", str(data_dir)]
            alive: int | None = None
            try:
                feeder.start()
                for _ in range(args.rounds):
                    pid = launcher.start(argv, log)
                    alive = pid
                    if rng.random() < args.startup_share:
                        time.sleep(rng.uniform(0.0, 0.05))
                        startup_kills += 1
                    elif wait_for_lock(data_dir / "serve.lock", pid, 60.0):
                        time.sleep(rng.uniform(0.0, args.max_after))
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                    code = launcher.wait(pid)
                    alive = None
                    kills += code == -signal.SIGKILL
                    early_exits += code != -signal.SIGKILL
                feeder.halt.set()
                feeder.join()
                pid = alive = launcher.start([*argv, "--once"], log)
                final_code = launcher.wait(pid)
                alive = None
            finally:
                feeder.halt.set()
                if alive is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(alive, signal.SIGKILL)
                launcher.close()
    finally:
        model.stop()
    result: dict[str, Any] = {
        "rounds": args.rounds,
        "messages": len(feeder.added),
        "kills": kills,
        "startup_kills": startup_kills,
        "early_exits": early_exits,
        "final_exit": final_code,
        "mode": "spawn" if args.spawn else "fork",
    }
    result.update(check(data_dir, feeder.added, script))
    result["model_requests"] = len(model.requests)
    result["seconds"] = round(time.monotonic() - started, 1)
    if args.keep:
        result["data_dir"] = str(data_dir)
    elif result["lost"] or result["duplicates"] or result["parse_errors"] or final_code:
        result["data_dir"] = str(data_dir)  # keep the evidence
        _tail(log, sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return result


def _quiet_resets(model: Any) -> None:
    """Killed clients reset their connections; that is the point here, not an error."""
    server = model._server
    report = server.handle_error

    def handle_error(request: Any, address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            report(request, address)

    server.handle_error = handle_error


def _tail(log: Path, out: TextIO, lines: int = 40) -> None:
    with contextlib.suppress(OSError):
        out.write("".join(log.read_text(errors="replace").splitlines(True)[-lines:]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-after", type=float, default=1.5, help="seconds after start-up")
    parser.add_argument("--startup-share", type=float, default=0.1, help="rounds killed early")
    parser.add_argument("--rate", type=float, default=1.5, help="messages per second")
    parser.add_argument("--spawn", action="store_true", help="a new interpreter per round")
    parser.add_argument("--keep", action="store_true", help="keep the data dir")
    parser.add_argument("--zygote", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.zygote:
        return zygote_main()
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up on a plain kill
    print(json.dumps(bench(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
