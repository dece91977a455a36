"""Saves of ``todos.md`` that Jarvis did not make: telling a hand edit from a stale buffer.

An editor that read the list a while ago and saves it whole brings back what the list held
then: tasks added since are missing, and tasks changed since are back as they were. A person
who edits the list means their changes. So when the file changed under the kept copy:

- a task of the kept copy that is missing from the file (and was not archived meanwhile,
  nor left in a section that no longer reads) is restored from the kept copy;
- a task whose text in the file is one that Jarvis wrote earlier (an older version) takes
  the kept copy again, or is left out when the task has ended and was archived since;
- anything else in the file is the person's edit and wins.

Each restore is said in one warning line.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable

from jarvis.gateway.markdown import Document, Malformed
from jarvis.gateway.todo_format import OPEN_STATUSES, Todo, format_todo

log = logging.getLogger(__name__)

VERSIONS_KEPT = 16
"""Older texts remembered per task, to recognise a stale save."""
RETIRED_KEPT = 1_000
"""Tasks moved to the archive whose texts are still remembered."""
_ID_IN_RAW = re.compile(r"^### \[\s*[Tt](\d+)\s*\]", re.MULTILINE)


class WrittenVersions:
    """The last texts this process wrote for each task, and for the last
    :data:`RETIRED_KEPT` tasks that left the list (archived), whose old copies a stale
    save can still bring back."""

    def __init__(self) -> None:
        self._texts: dict[str, deque[str]] = {}
        self._retired: OrderedDict[str, deque[str]] = OrderedDict()

    def add(self, todo_id: str, text: str) -> None:
        kept = self._texts.get(todo_id) or self._retired.pop(todo_id, None)
        if kept is None:
            kept = deque(maxlen=VERSIONS_KEPT)
        self._texts[todo_id] = kept
        if not kept or kept[-1] != text:
            kept.append(text)

    def older(self, todo_id: str, text: str) -> bool:
        """Whether ``text`` is a version of the task this process wrote before."""
        kept = self._texts.get(todo_id) or self._retired.get(todo_id)
        return kept is not None and text in kept

    def keep_only(self, ids: Iterable[str]) -> None:
        """Tasks not in ``ids`` left the list: their texts are kept a while, retired."""
        wanted = set(ids)
        for todo_id in [i for i in self._texts if i not in wanted]:
            self._retired[todo_id] = self._texts.pop(todo_id)
        while len(self._retired) > RETIRED_KEPT:
            self._retired.popitem(last=False)


def reconcile(
    kept: Document[Todo],
    found: Document[Todo],
    written: WrittenVersions,
    archived: Callable[[list[str]], set[str]],
) -> list[str]:
    """Bring ``kept``'s tasks back into ``found`` (the file as just read) where an outside
    save lost them (see the module doc); returns the ids restored, ``found.changed`` set."""
    mine = {t.id: t for t in kept.entries()}
    restored: list[str] = []
    stale: list[int] = []  # indexes of old copies of tasks no longer in the kept list
    for index, item in enumerate(found.items):
        if isinstance(item, Malformed):
            ours = _torn_copy(item, mine)
            if ours is not None:  # read while an editor was still writing it
                found.items[index] = ours
                restored.append(ours.id)
                log.warning("todos.md: %s was cut short in the file; restored", ours.id)
            continue
        if item.id not in mine:
            if item.status in OPEN_STATUSES or written.older(item.id, format_todo(item)):
                stale.append(index)  # an old copy, when the task has been archived since
            continue
        if item == mine[item.id]:
            continue
        if written.older(item.id, format_todo(item)):
            ours = mine[item.id]
            found.items[index] = ours
            restored.append(item.id)
            log.warning(
                "todos.md: an outside save brought back an older copy of %s (%s); "
                "kept Jarvis's newer one (%s)",
                item.id,
                item.status,
                ours.status,
            )
    dropped = _drop_archived(found, stale, archived)
    present = {int(t.id[1:]) for t in found.entries()} | _numbers_in_unreadable(found)
    missing = [todo_id for todo_id in mine if int(todo_id[1:]) not in present]
    gone_to_archive = archived(missing) if missing else set()
    for todo_id in missing:
        if todo_id in gone_to_archive:
            continue
        found.items.append(mine[todo_id])
        restored.append(todo_id)
        log.warning(
            "todos.md: task %s (%s) vanished under an outside save; restored from Jarvis's "
            "own copy (to end a task, cancel it)",
            todo_id,
            mine[todo_id].status,
        )
    found.changed |= bool(restored or dropped)
    return restored


def _drop_archived(
    found: Document[Todo], stale: list[int], archived: Callable[[list[str]], set[str]]
) -> list[str]:
    """Take out of ``found`` the old copies (at ``stale``) of tasks that ended and were
    archived since: an outside save does not bring an ended task back to run again."""
    items = [found.items[i] for i in stale]
    ids = [item.id for item in items if isinstance(item, Todo)]
    gone = archived(ids) if ids else set()
    dropped = []
    for index in reversed(stale):
        item = found.items[index]
        if isinstance(item, Todo) and item.id in gone:
            del found.items[index]
            dropped.append(item.id)
            log.warning(
                "todos.md: an outside save brought back an older copy of %s (%s), which "
                "has ended and was archived; left it out",
                item.id,
                item.status,
            )
    return dropped


def _numbers_in_unreadable(doc: Document[Todo]) -> set[int]:
    text = "\n".join(item.raw for item in doc.malformed())
    return {int(n) for n in _ID_IN_RAW.findall(text)}


def _torn_copy(item: Malformed, mine: dict[str, Todo]) -> Todo | None:
    """The kept task an unreadable section is the beginning of, if any."""
    head = _ID_IN_RAW.match(item.raw)
    if head is None:
        return None
    ours = next((t for t in mine.values() if int(t.id[1:]) == int(head[1])), None)
    return ours if ours is not None and format_todo(ours).startswith(item.raw) else None
