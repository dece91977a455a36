"""The RemoteDesktop portal's restore token, kept in the data dir (a 0600 file).

With ``persist_mode`` 2 the portal's ``Start`` returns a token that lets the next
session skip the consent dialog. :class:`RestoreToken` keeps the newest one, and
remembers when the portal rejected the one it was given (it is dropped then, and consent
is asked again), so ``jarvis doctor`` can say which: ``none``, ``stored`` or ``rejected``.
The token itself never reaches a log, a record or the model: only its state does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

TokenState = Literal["none", "stored", "rejected"]
TOKEN_FILE = Path("portal") / "restore_token.json"


class RestoreToken:
    """The token file under ``data_dir``."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / TOKEN_FILE

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def load(self) -> str | None:
        """The stored token, or None."""
        token = self._read().get("token")
        return token if isinstance(token, str) and token else None

    @property
    def state(self) -> TokenState:
        data = self._read()
        if data.get("token"):
            return "stored"
        return "rejected" if data.get("state") == "rejected" else "none"

    def save(self, token: str) -> None:
        """Keep ``token`` (replacing any older one) in a file only we can read."""
        self._write({"token": token, "state": "stored"})

    def reject(self) -> None:
        """The portal would not take the stored token: forget it, remember why."""
        self._write({"state": "rejected"})

    def _write(self, data: dict[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        part = self.path.with_suffix(".part")
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.chmod(part, 0o600)  # an older file may have kept wider bits
        os.replace(part, self.path)
