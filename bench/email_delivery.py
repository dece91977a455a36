"""Email channel bench: delivery to the inbox with IDLE, and the time to authenticate.

A real dovecot (temporary config, loopback port, Maildir) and aiosmtpd; the channel runs
with IDLE as ``jarvis serve`` runs it. Each round delivers one authenticated mail into the
Maildir (an MTA's local delivery) and waits until its message is in ``inbox.md``:
``delivery_to_inbox_ms``. ``authenticate_ms`` is the header checks and the trusted
Authentication-Results check on one mail; ``decide_ms`` the whole verdict (parse, filter,
authenticate, second factor, limits, body text). Target: delivery p50 <= 1000 ms.

    python bench/email_delivery.py [--rounds 20]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_P50_MS = 1000.0


def _stats(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    return {
        "n": len(values),
        "p50": round(statistics.median(ordered), 3),
        "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 3),
        "max": round(ordered[-1], 3),
    }


def bench_auth(rounds: int) -> dict[str, Any]:
    from email import message_from_bytes
    from email import policy as email_policy

    from jarvis.gateway.channels.email.authenticate import authenticate
    from jarvis.gateway.channels.email.decide import decide
    from jarvis.gateway.channels.email.state import LedgerData
    from tests.email_mail import email_settings, mail, whitelist

    raw, wl, settings = mail(), whitelist("none"), email_settings()
    auth, whole = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        msg = message_from_bytes(raw, policy=email_policy.default)
        identity, reason = authenticate(msg, raw, wl)  # type: ignore[arg-type]
        auth.append((time.perf_counter() - start) * 1000)
        assert identity is not None, reason
        start = time.perf_counter()
        decision = decide(raw, wl, LedgerData(), settings, time.time())
        whole.append((time.perf_counter() - start) * 1000)
        assert decision.kind == "task", decision
    return {"authenticate_ms": _stats(auth), "decide_ms": _stats(whole)}


async def bench_delivery(rounds: int, root: Path) -> dict[str, Any]:
    from jarvis.config import load_settings
    from jarvis.events import EventBus
    from jarvis.gateway.channels.email.channel import EmailChannel, queue_id
    from jarvis.gateway.queue import MessageQueue
    from jarvis.gateway.todos import TodoList
    from tests.email_mail import headers, mail, new_id
    from tests.email_servers import PASSWORD, Dovecot, SmtpSink
    from tests.email_setup import email_values, write_whitelist

    server = Dovecot(root / "dovecot")
    server.start()
    sink = SmtpSink()
    sink.start()
    channel: EmailChannel | None = None
    try:
        os.environ["JARVIS_EMAIL_PASSWORD"] = PASSWORD
        data = root / "data"
        write_whitelist(data, "none")
        values = email_values(server, sink, tasks_per_hour=10_000)  # the bench is one busy sender
        settings = load_settings(data, email=values, long_term_memory=False)
        queue = MessageQueue(data)
        queued = asyncio.Event()
        channel = EmailChannel(settings, queue, TodoList(data), EventBus(), on_queued=queued.set)
        await channel.start()
        deadline = time.monotonic() + 15
        while not channel.fetcher.connected.is_set():
            if time.monotonic() > deadline:
                raise RuntimeError("the channel did not connect")
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.3)  # let the first catch-up finish and IDLE begin
        delays = []
        for _ in range(rounds):
            mid = new_id()
            raw = mail(headers(Message_ID=mid))
            queued.clear()
            start = time.perf_counter()
            server.deliver(raw)
            await asyncio.wait_for(queued.wait(), timeout=30)
            delays.append((time.perf_counter() - start) * 1000)
            if queue_id(mid) not in {m.id for m in queue.pending()}:
                raise RuntimeError(f"{mid} was reported queued but is not in the inbox")
            await asyncio.sleep(0.05)  # back in IDLE before the next delivery
        return {"delivery_to_inbox_ms": _stats(delays), "replies_sent": len(sink.messages)}
    finally:
        if channel is not None:
            await channel.stop()
        sink.stop()
        server.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="jarvis-bench-email-"))
    root.chmod(0o755)  # dovecot's own users read the passwd file and the Maildir
    try:
        out: dict[str, Any] = asyncio.run(bench_delivery(args.rounds, root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out.update(bench_auth(max(200, args.rounds * 10)))
    out["target_delivery_p50_ms"] = TARGET_P50_MS
    out["delivery_target_met"] = out["delivery_to_inbox_ms"]["p50"] <= TARGET_P50_MS
    print(json.dumps(out))


if __name__ == "__main__":
    main()
