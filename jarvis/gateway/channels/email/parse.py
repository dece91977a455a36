"""The text of a mail, and its attachments put aside.

Text: text/plain when there is one; otherwise the visible text of the HTML part
(lxml drops scripts, styles and hidden elements, trafilatura turns the rest into text).
Quoted replies and signatures are cut and the result is capped (in UTF-8 bytes).

Attachments are written to the quarantine folder, never opened: the name is cleaned,
the real type is read from the bytes (``filetype``) and compared with what the mail
declares, and the file gets no execute bit. The task lists them.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

import filetype
import lxml.html
import trafilatura
from lxml_html_clean import Cleaner

_HIDDEN_STYLE = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0|opacity\s*:\s*0(?![.\d])",
    re.IGNORECASE,
)
_ATTRIBUTION = re.compile(r"^\s*(On .{0,200}wrote:|Am .{0,200}schrieb .{0,80}:)\s*$")
_ORIGINAL = re.compile(r"^\s*-{2,}\s*(Original Message|Forwarded message)\s*-{2,}", re.I)
_OUTLOOK = re.compile(r"^\s*From:\s.+$")
UNREADABLE = "unreadable"
EXECUTABLE = {
    "application/x-executable",
    "application/x-msdownload",
    "application/x-sh",
    "application/x-mach-binary",
}


@dataclass(frozen=True)
class Attachment:
    name: str
    declared: str
    real: str
    size: int
    path: Path

    def describe(self) -> str:
        if self.real == UNREADABLE:
            return f"{self.name}: could not be read; not saved"
        note = "" if self.declared == self.real else f" (declared {self.declared})"
        if self.real in EXECUTABLE:
            note += ", an executable: never run it"
        return f"{self.name}: {self.real}{note}, {self.size} bytes, quarantined at {self.path}"


def html_text(html: str) -> str:
    """The visible text of an HTML body."""
    try:
        tree = lxml.html.document_fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return ""
    for element in list(tree.iter()):
        if not isinstance(element.tag, str) or element.getparent() is None:
            continue
        style = element.get("style") or ""
        if (
            element.get("hidden") is not None
            or element.get("aria-hidden") == "true"
            or _HIDDEN_STYLE.search(style)
        ):
            element.drop_tree()
    cleaner = Cleaner(
        scripts=True,
        javascript=True,
        style=True,
        comments=True,
        forms=False,
        page_structure=False,
        meta=True,
        embedded=True,
        frames=True,
    )
    cleaned = cleaner.clean_html(tree)
    markup = lxml.html.tostring(cleaned, encoding="unicode")
    text = trafilatura.extract(markup, favor_recall=True, include_comments=False)
    if not text:
        text = trafilatura.html2txt(markup) or ""
    return text.strip()


def strip_quotes(text: str) -> str:
    """Cut quoted replies (``>`` lines, "On ... wrote:", forwarded blocks) and signatures."""
    out: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.rstrip() == "--" or line == "-- ":
            break
        if _ATTRIBUTION.match(line) or _ORIGINAL.match(line):
            break
        if out and _OUTLOOK.match(line) and not out[-1].strip():
            break
        if line.lstrip().startswith(">"):
            continue
        out.append(line.rstrip())
    return "\n".join(out).strip()


def cap(text: str, limit: int) -> str:
    """At most ``limit`` UTF-8 bytes, cut at a character boundary, marked when cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: limit - 20].decode("utf-8", "ignore").rstrip() + "\n[... cut]"


def body_text(msg: EmailMessage, limit: int) -> str:
    """The mail's own words: text/plain preferred, HTML's visible text otherwise."""
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, ValueError):
        payload = part.get_payload(decode=True)
        content = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
    if not isinstance(content, str):
        return ""
    if part.get_content_type() == "text/html":
        content = html_text(content)
    return cap(strip_quotes(content), limit)


def safe_name(name: str, fallback: str) -> str:
    base = os.path.basename(name.replace("\\", "/")).strip()
    base = re.sub(r"[^\w.\- ]", "_", base).strip(". ")[:100]
    return base or fallback


def quarantine(msg: EmailMessage, folder: Path, key: str) -> list[Attachment]:
    """Write each attachment to ``folder/KEY/`` (0600) and describe it; nothing is opened.
    A part the email package cannot read is listed as unreadable and not saved."""
    out: list[Attachment] = []
    target = folder / hashlib.sha256(key.encode()).hexdigest()[:16]
    try:
        parts = list(msg.iter_attachments())
    except Exception:  # the email package's parser bugs: no attachment is taken
        return out
    for index, part in enumerate(parts):
        try:
            payload = part.get_payload(decode=True)
            declared = part.get_content_type()
            name = safe_name(part.get_filename() or "", f"attachment-{index + 1}")
        except Exception:  # the email package's parser bugs: listed, not saved
            out.append(Attachment(f"attachment-{index + 1}", "?", UNREADABLE, 0, target))
            continue
        if not isinstance(payload, bytes):
            continue
        kind = filetype.guess(payload)
        real = kind.mime if kind is not None else _plain_or_binary(payload)
        target.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = target / f"{index + 1:02d}-{name}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        out.append(Attachment(name, declared, real, len(payload), path))
    return out


def _plain_or_binary(data: bytes) -> str:
    return "text/plain" if _texty(data) else "application/octet-stream"


def _texty(data: bytes) -> bool:
    try:
        data[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\x00" not in data[:4096]
