"""The side panel: a live thumbnail of the screen (last click marked), the todos, and the
fleet's workers (``jarvis serve --fleet``; hidden for a daemon that runs its tasks itself)."""

from __future__ import annotations

import io
from typing import Any

from PIL import Image as PILImage
from PIL import ImageDraw
from rich.markup import escape
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static
from textual_image.widget import HalfcellImage
from textual_image.widget import Image as AutoImage
from textual_image.widget._base import Image as BaseImage

TODO_MARKS = {
    "pending": "○",
    "in_progress": "●",
    "completed": "✓",
    "failed": "✗",
    "needs_user": "?",
    "cancelled": "⊘",
}
THUMB_WIDTH = 320


def marked_thumbnail(png: bytes, click: tuple[int, int] | None) -> PILImage.Image:
    """The screenshot scaled to a thumbnail, with a red ring where the last click went.

    ``click`` is in the screenshot's pixel space (the model's space, as the tools get it).
    """
    image = PILImage.open(io.BytesIO(png)).convert("RGB")
    scale = THUMB_WIDTH / image.width
    thumb = image.resize((THUMB_WIDTH, max(1, round(image.height * scale))))
    if click is not None:
        x, y = click[0] * scale, click[1] * scale
        draw = ImageDraw.Draw(thumb)
        for radius, width in ((14, 4), (4, 0)):
            box = (x - radius, y - radius, x + radius, y + radius)
            if width:
                draw.ellipse(box, outline=(255, 40, 40), width=width)
            else:
                draw.ellipse(box, fill=(255, 40, 40))
    return thumb


def thumbnail_widget(halfblocks: bool, **kwargs: Any) -> BaseImage:
    """An image widget: half-blocks (``tui.thumbnail``), or the best the terminal can do."""
    image_class = HalfcellImage if halfblocks else AutoImage
    return image_class(**kwargs)


def todo_lines(todos: list[dict[str, Any]]) -> str:
    if not todos:
        return "no todos"
    lines = []
    for todo in todos:
        mark = TODO_MARKS.get(str(todo.get("status")), "•")
        lines.append(
            f"{mark} {escape(str(todo.get('id', '')))} {escape(str(todo.get('title', '')))}"
        )
    return "\n".join(lines)


WORKER_MARKS = {"idle": "○", "running": "●", "stopping": "◌"}


def worker_lines(workers: list[dict[str, Any]]) -> str:
    """One line per worker: name, display, state, the task it runs."""
    if not workers:
        return "no worker has sent a heartbeat lately"
    lines = []
    for w in workers:
        state = str(w.get("state", ""))
        doing = f"runs {w['task']}" if w.get("task") else state
        where = str(w.get("display", ""))
        if w.get("live") is False:
            where = f"{w.get('host', '')} {where}".strip()
        mark = WORKER_MARKS.get(state, "•")
        lines.append(f"{mark} {escape(str(w.get('name', '')))} {escape(where)} · {escape(doing)}")
    return "\n".join(lines)


def schedule_lines(schedules: list[dict[str, Any]]) -> str:
    """One line per schedule: id, when (zone), the next run in its own zone."""
    lines = []
    for s in schedules:
        at = s.get("next_run")
        nxt = f"next {str(at)[:10]} {str(at)[11:16]}" if at else "paused"
        when = f"{s.get('when', '')} ({s.get('tz', '')})"
        lines.append(f"◷ {escape(str(s.get('id', '')))} {escape(when)} · {escape(nxt)}")
    return "\n".join(lines)


class SidePanel(Vertical):
    """Screen thumbnail on top, todos below."""

    HELP = (
        "The screen as Jarvis last saw it (a red ring marks the last click) and the todo list "
        "with each task's status. Toggle this panel from the command palette (ctrl+p)."
    )

    def __init__(self, halfblocks: bool) -> None:
        super().__init__(id="side")
        self.thumb = thumbnail_widget(halfblocks, id="thumb")
        self.todos = Static("no todos", id="todos", markup=True)
        self.caption = Static("no screenshot yet", id="thumb-caption")
        self.workers_title = Static("Workers", classes="side-title", id="workers-title")
        self.fleet_list = Static("", id="workers", markup=True)
        self.workers_title.display = self.fleet_list.display = False
        self.schedules_title = Static("Schedules", classes="side-title", id="schedules-title")
        self.schedule_list = Static("", id="schedules", markup=True)
        self.schedules_title.display = self.schedule_list.display = False

    def compose(self) -> ComposeResult:
        yield Static("Screen", classes="side-title")
        yield self.thumb
        yield self.caption
        yield Static("Todos", classes="side-title")
        yield self.todos
        yield self.schedules_title
        yield self.schedule_list
        yield self.workers_title
        yield self.fleet_list

    def show_screen(self, png: bytes, click: tuple[int, int] | None, note: str = "") -> None:
        """The thumbnail; ``note`` says when it is not the screen now (a fleet worker's
        last step picture)."""
        self.thumb.image = marked_thumbnail(png, click)
        where = f"last click at {click[0]},{click[1]}" if click else "no click yet"
        self.caption.update(f"{note} · {where}" if note else where)

    def show_todos(self, todos: list[dict[str, Any]]) -> None:
        self.todos.update(todo_lines(todos))

    def show_schedules(self, schedules: list[dict[str, Any]]) -> None:
        """``GET /api/schedules``'s schedules with their next run; hidden while none."""
        self.schedules_title.display = self.schedule_list.display = bool(schedules)
        self.schedule_list.update(schedule_lines(schedules))

    def show_workers(self, fleet: dict[str, Any]) -> None:
        """``GET /api/workers``'s answer: the list, shown only for a fleet."""
        shown = bool(fleet.get("fleet"))
        self.workers_title.display = self.fleet_list.display = shown
        if shown:
            self.fleet_list.update(worker_lines(list(fleet.get("workers") or [])))
