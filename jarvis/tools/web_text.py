"""A fetched page as a title and readable text (trafilatura for HTML)."""

from __future__ import annotations

import re

import lxml.html
import trafilatura

_SPACES = re.compile(r"[ \t\r\f\v]+")
_BLANKS = re.compile(r"\n{3,}")


def page_text(body: str, url: str, is_html: bool) -> tuple[str | None, str]:
    """(title, text) of a page: the main text of HTML (boilerplate dropped), else the body."""
    if not is_html:
        return None, _tidy(body)
    title = _html_title(body)
    document = trafilatura.bare_extraction(
        body, url=url, with_metadata=True, include_comments=False, include_tables=True
    )
    text = getattr(document, "text", None) if document is not None else None
    if not text:  # a short page trafilatura finds no article in: all its visible text
        text = _visible_text(body)
    if title is None and document is not None:
        title = getattr(document, "title", None)
    return title, _tidy(text)


def _html_title(body: str) -> str | None:
    try:
        tree = lxml.html.fromstring(body)
    except (ValueError, lxml.etree.ParserError):
        return None
    found = tree.findtext(".//title")
    return " ".join(found.split()) if found and found.strip() else None


def _visible_text(body: str) -> str:
    try:
        tree = lxml.html.fromstring(body)
    except (ValueError, lxml.etree.ParserError):
        return body
    for node in tree.xpath("//script|//style|//noscript|//template"):
        node.drop_tree()
    return str(tree.text_content())


def _tidy(text: str) -> str:
    lines = [_SPACES.sub(" ", line).strip() for line in text.splitlines()]
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()
