"""The log: ``DATA/logs/DATE.log`` for every command, with secrets redacted.

Every record passes a filter that runs it through :mod:`jarvis.redaction`, so a key
that ends up in an exception message or a URL never reaches the file or the terminal.
"""

from __future__ import annotations

import logging
from datetime import date
from pathlib import Path

from jarvis.redaction import known_secrets, redact

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

SHOWN = {"shown_on_console": True}
"""``extra=`` for a record the live console also shows as an event (a model retry, a
tool-mode switch, giving up): once a :class:`~jarvis.console.ConsoleReporter` draws the
run, such records go to the log file only, so nothing is said twice (``-v`` shows all)."""


class NotShownTwice(logging.Filter):
    """On the stderr handler: drops records marked :data:`SHOWN` while a console shows them."""

    def __init__(self) -> None:
        super().__init__()
        self.console_active = False

    def filter(self, record: logging.LogRecord) -> bool:
        return not (self.console_active and getattr(record, "shown_on_console", False))


def console_shows_events() -> None:
    """Called by the live console: records it shows stop going to stderr (not with -v)."""
    for handler in logging.getLogger().handlers:
        for kept in handler.filters:
            if isinstance(kept, NotShownTwice):
                kept.console_active = True


class RedactSecrets(logging.Filter):
    """Every record through :func:`jarvis.redaction.redact`: ``secrets`` when given, else
    the secrets known when the record is written (so a token registered later counts)."""

    def __init__(self, secrets: set[str] | None = None) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = known_secrets() if self.secrets is None else self.secrets
        said = record.getMessage()
        message = redact(said, secrets)
        trace = logging.Formatter().formatException(record.exc_info) if record.exc_info else ""
        clean_trace = redact(trace, secrets)
        if message == said and clean_trace == trace:
            return True  # nothing to hide: the record stays as it is, traceback and all
        if clean_trace:
            message += "\n" + clean_trace
            record.exc_info = None
            record.exc_text = None
        record.msg, record.args = message, None
        return True


def log_path(data_dir: Path, day: date | None = None) -> Path:
    return Path(data_dir) / "logs" / f"{(day or date.today()).isoformat()}.log"


def setup_logging(data_dir: Path | None, verbose: bool = False) -> Path | None:
    """Log INFO and up to the day's file (when the data dir is writable), warnings to stderr."""
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    for old in [h for h in root.handlers if getattr(h, "jarvis", False)]:
        root.removeHandler(old)  # ours from an earlier call; others' handlers stay
        old.close()
    redactor = RedactSecrets()
    console = logging.StreamHandler()
    console.setLevel(logging.DEBUG if verbose else logging.WARNING)
    console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    console.addFilter(redactor)
    if not verbose:
        console.addFilter(NotShownTwice())
    console.jarvis = True  # type: ignore[attr-defined]
    root.addHandler(console)
    if data_dir is None:
        return None
    path = log_path(data_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        return None
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(redactor)
    handler.jarvis = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    for noisy in ("httpx", "httpcore", "chromadb", "watchdog", "PIL"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return path
