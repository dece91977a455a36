"""The secret store: names and descriptions in a catalog, values in the OS keyring or an
encrypted file whose key the user holds.

- ``DATA/config/secrets.json`` (0600) lists each secret's name, description, ``only_in``
  patterns, kind (``password`` or ``totp``) and where its value is kept; it holds no value.
- Values live in the OS keyring (the ``keyring`` package: Secret Service, KWallet) under the
  service ``jarvis-secrets:<data dir>``, or in ``DATA/config/secrets.enc``: one Fernet token
  (AES-128-CBC with HMAC-SHA256) over the JSON of every value, its key derived with scrypt
  from a passphrase the user holds (``JARVIS_SECRETS_KEY``, a key file outside the data dir,
  or typed at the prompt) and a random salt kept beside the token.
- ``safety.secrets.store`` chooses: ``keyring``, ``file``, or ``auto`` (the keyring when a
  working one is there, else the file).

Every value read is registered with :mod:`jarvis.redaction`, so a text that would carry it
(a log line, a journal event, a tool result, the tree the model reads) is redacted.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import secrets as random
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jarvis import redaction
from jarvis.fsutil import atomic_write_bytes
from jarvis.safety.settings import SecretsSettings
from jarvis.secrets.totp import decode_seed

CATALOG = Path("config") / "secrets.json"
VAULT = Path("config") / "secrets.enc"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SCRYPT_N = 2**15

Kind = Literal["password", "totp"]
Where = Literal["keyring", "file"]


class SecretsError(Exception):
    """A store that cannot be used, or a secret that cannot be found: one line for people."""


class SecretInfo(BaseModel):
    """What the catalog keeps of one secret (never its value)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME.pattern)
    description: str = ""
    only_in: list[str] = Field(default_factory=list)
    """Window-title patterns (``*github.com*``, fnmatch, any case); empty: anywhere."""
    kind: Kind = "password"
    store: Where = "file"

    def line(self) -> str:
        """``name: description`` as the model sees it."""
        text = f"{self.name}: {self.description}" if self.description else self.name
        if self.kind == "totp":
            text += " (a one-time code: use type_totp)"
        return text


class Catalog(BaseModel):
    model_config = ConfigDict(extra="forbid")

    secrets: list[SecretInfo] = Field(default_factory=list)


def keyring_usable() -> bool:
    """Whether the OS has a keyring the ``keyring`` package can use (not its fail or null
    backend)."""
    try:
        import keyring
        from keyring.backends import chainer, fail, null
    except ImportError:
        return False
    found = keyring.get_keyring()
    if isinstance(found, fail.Keyring | null.Keyring):
        return False
    return not (isinstance(found, chainer.ChainerBackend) and not found.backends)


class KeyringValues:
    """Values in the OS keyring, one entry per secret."""

    def __init__(self, data_dir: Path) -> None:
        self.service = f"jarvis-secrets:{data_dir.resolve()}"

    def get(self, name: str) -> str | None:
        import keyring

        return keyring.get_password(self.service, name)

    def set(self, name: str, value: str) -> None:
        import keyring

        keyring.set_password(self.service, name, value)

    def delete(self, name: str) -> None:
        import keyring
        from keyring.errors import PasswordDeleteError

        with contextlib.suppress(PasswordDeleteError):
            keyring.delete_password(self.service, name)


class FileValues:
    """Values in one encrypted file; ``passphrase`` is asked only when a value is needed."""

    def __init__(self, path: Path, passphrase: Callable[[], str]) -> None:
        self.path = path
        self._passphrase = passphrase
        self._values: dict[str, str] | None = None
        self._salt = b""
        self._key = b""

    def _fernet(self) -> object:
        from cryptography.fernet import Fernet
        from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

        if not self._key:
            secret = self._passphrase()
            if not secret:
                raise SecretsError(
                    "the secrets file needs its passphrase: set JARVIS_SECRETS_KEY (or "
                    "safety.secrets.key_file), or run this in a terminal"
                )
            kdf = Scrypt(salt=self._salt, length=32, n=SCRYPT_N, r=8, p=1)
            self._key = base64.urlsafe_b64encode(kdf.derive(secret.encode("utf-8")))
        return Fernet(self._key)

    def _load(self) -> dict[str, str]:
        if self._values is not None:
            return self._values
        from cryptography.fernet import Fernet, InvalidToken

        if not self.path.exists():
            self._salt = random.token_bytes(16)
            self._values = {}
            return self._values
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            self._salt = base64.b64decode(raw["salt"])
            token = raw["token"].encode("ascii")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SecretsError(f"{self.path} cannot be read: {exc}") from exc
        fernet = self._fernet()
        assert isinstance(fernet, Fernet)
        try:
            values = json.loads(fernet.decrypt(token))
        except InvalidToken as exc:
            self._key = b""
            raise SecretsError(f"wrong passphrase for {self.path}") from exc
        self._values = {str(k): str(v) for k, v in values.items()}
        return self._values

    def _save(self, values: dict[str, str]) -> None:
        from cryptography.fernet import Fernet

        fernet = self._fernet()
        assert isinstance(fernet, Fernet)
        token = fernet.encrypt(json.dumps(values).encode("utf-8")).decode("ascii")
        body = {"version": 1, "kdf": "scrypt", "salt": base64.b64encode(self._salt).decode()}
        body["token"] = token
        private_file(self.path)
        atomic_write_bytes(self.path, json.dumps(body).encode("utf-8"))
        self._values = values

    def get(self, name: str) -> str | None:
        return self._load().get(name)

    def set(self, name: str, value: str) -> None:
        self._save({**self._load(), name: value})

    def delete(self, name: str) -> None:
        values = dict(self._load())
        if values.pop(name, None) is not None:
            self._save(values)


def private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 unless it exists (the atomic write keeps it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))


def passphrase_from(settings: SecretsSettings, data_dir: Path) -> str | None:
    """The passphrase from the environment or the key file, if either gives one."""
    value = os.environ.get(settings.key_env, "")
    if value:
        return value
    if settings.key_file is None:
        return None
    key_file = settings.key_file.expanduser().resolve()
    if key_file.is_relative_to(data_dir.resolve()):
        raise SecretsError(
            f"safety.secrets.key_file {key_file} is inside the data dir: keep the key elsewhere"
        )
    try:
        return key_file.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise SecretsError(f"safety.secrets.key_file cannot be read: {exc}") from exc


class SecretStore:
    """The catalog and the values of one data dir."""

    def __init__(
        self,
        data_dir: Path,
        settings: SecretsSettings,
        ask: Callable[[], str] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.settings = settings
        self.catalog_path = data_dir / CATALOG
        self._ask = ask
        self._file = FileValues(data_dir / VAULT, self._passphrase)
        self._keyring: KeyringValues | None = None

    def _passphrase(self) -> str:
        found = passphrase_from(self.settings, self.data_dir)
        if found:
            return found
        if self._ask is None:
            raise SecretsError(
                f"the secrets file is locked: set {self.settings.key_env} or "
                "safety.secrets.key_file to its passphrase"
            )
        return self._ask()

    def default_store(self) -> Where:
        """Where a new value goes: the setting, ``auto`` meaning the keyring if it works."""
        choice = self.settings.store
        if choice == "auto":
            return "keyring" if keyring_usable() else "file"
        if choice == "keyring" and not keyring_usable():
            raise SecretsError("safety.secrets.store is keyring, but no OS keyring works here")
        return choice

    def _values(self, where: Where) -> KeyringValues | FileValues:
        if where == "file":
            return self._file
        if self._keyring is None:
            self._keyring = KeyringValues(self.data_dir)
        return self._keyring

    # --- the catalog -----------------------------------------------------------------
    def entries(self) -> list[SecretInfo]:
        if not self.catalog_path.exists():
            return []
        try:
            raw = json.loads(self.catalog_path.read_text(encoding="utf-8"))
            return Catalog.model_validate(raw).secrets
        except (OSError, ValueError, ValidationError) as exc:
            first = str(exc).splitlines()[0]
            raise SecretsError(f"{self.catalog_path} cannot be read: {first}") from exc

    def get(self, name: str) -> SecretInfo | None:
        return next((e for e in self.entries() if e.name == name), None)

    def _write(self, entries: list[SecretInfo]) -> None:
        private_file(self.catalog_path)
        text = Catalog(secrets=entries).model_dump_json(indent=2) + "\n"
        atomic_write_bytes(self.catalog_path, text.encode("utf-8"))

    # --- changes -----------------------------------------------------------------------
    def add(self, info: SecretInfo, value: str) -> SecretInfo:
        """Store ``value`` under ``info.name`` (replacing one of that name)."""
        if not value:
            raise SecretsError("the value is empty")
        if info.kind == "totp":
            decode_seed(value)  # SeedError (a ValueError) for a seed that is not base32
            value = "".join(value.split()).upper()
        info = info.model_copy(update={"store": self.default_store()})
        old = self.get(info.name)
        self._values(info.store).set(info.name, value)
        if old is not None and old.store != info.store:
            self._values(old.store).delete(old.name)
        rest = [e for e in self.entries() if e.name != info.name]
        self._write([*rest, info])
        return info

    def remove(self, name: str) -> bool:
        old = self.get(name)
        if old is None:
            return False
        self._values(old.store).delete(name)
        self._write([e for e in self.entries() if e.name != name])
        return True

    # --- values ------------------------------------------------------------------------
    def value(self, name: str) -> str:
        """The value of ``name``, registered with the redaction from now on."""
        info = self.get(name)
        if info is None:
            raise SecretsError(f"no secret named '{name}'")
        found = self._values(info.store).get(name)
        if found is None:
            raise SecretsError(f"the value of '{name}' is missing from the {info.store} store")
        redaction.register(found)
        return found

    def load_all(self) -> int:
        """Read every value once so the redaction knows them all; how many were read."""
        count = 0
        for info in self.entries():
            self.value(info.name)
            count += 1
        return count


def open_store(data_dir: Path, settings: SecretsSettings) -> SecretStore:
    """The store of ``data_dir`` for code that cannot ask a person (the agent)."""
    return SecretStore(data_dir, settings)
