"""The conversation widget: every task's :class:`~jarvis.tui.cards.TaskView`, oldest first.

A run's view is mounted in the order the runs began (an older run opened later goes
above the newer ones), and the streamed thought text the app's timer collects is drawn
here in one go.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.containers import VerticalScroll

from jarvis.tui.cards import TaskView
from jarvis.tui.task_runs import TaskRun


class Conversation(VerticalScroll):
    """All tasks, oldest first; anchored to the bottom while the user is there."""

    HELP = (
        "The conversation: each task with the model's thoughts and a card per tool call. "
        "Scroll up to read; the view stays put until you scroll back to the bottom."
    )
    can_focus = True

    def view_of(self, task_id: str) -> TaskView | None:
        for view in self.query(TaskView):
            if view.run.task_id == task_id:
                return view
        return None

    def mount_run(self, run: TaskRun) -> TaskView:
        """A new view of ``run``, before the first run that began after it."""
        view = TaskView(run)
        later = [v for v in self.query(TaskView) if v.run.first_seq > run.first_seq]
        if later:
            self.mount(view, before=later[0])
        else:
            self.mount(view)
        return view

    def flush_thoughts(self, task_ids: Iterable[str]) -> None:
        """Draw the thought text that streamed in since the last time, for these tasks."""
        for task_id in task_ids:
            view = self.view_of(task_id)
            if view is not None and view.is_mounted:
                for thought in view.thought_views():
                    if thought.dirty and thought.is_mounted:
                        thought.flush()
