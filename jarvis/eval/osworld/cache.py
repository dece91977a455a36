"""The download cache of OSWorld tasks: files keyed by URL, filled by
``jarvis eval fetch TASKS --cache DIR`` where the network allows and only read by a run.

A file's name in the cache is the UUID5 of its URL (OSWorld's own key, without the
per-task folder), so one file that several tasks download is stored once.
"""

from __future__ import annotations

import shutil
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

FETCH_TIMEOUT_S = 300.0


def cache_key(url: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, url))


def cached_file(cache: Path, url: str) -> Path | None:
    """The cached copy of ``url``, or None when the cache does not have it."""
    if not url:
        return None
    path = cache / cache_key(url)
    return path if path.is_file() else None


def fetch(
    cache: Path, urls: Iterable[str], said: Callable[[str], None] = print
) -> tuple[int, list[str]]:
    """Download every URL not yet in ``cache``; (how many were fetched, the URLs that
    could not be). A partial download never lands under the URL's name."""
    cache.mkdir(parents=True, exist_ok=True)
    fetched, failed = 0, []
    for url in sorted(set(urls)):
        if cached_file(cache, url) is not None:
            continue
        target = cache / cache_key(url)
        partial = target.with_suffix(".part")
        try:
            with (
                urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_S) as answer,
                partial.open("wb") as out,
            ):
                shutil.copyfileobj(answer, out)
            partial.replace(target)
            fetched += 1
            said(f"fetched {url}")
        except (OSError, ValueError) as exc:
            partial.unlink(missing_ok=True)
            failed.append(url)
            said(f"could not fetch {url}: {exc}")
    return fetched, failed
