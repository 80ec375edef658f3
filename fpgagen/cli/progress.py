"""Progress of a command's long steps on stderr.

On a terminal: one line per step with a spinner (a check mark once done), a bar and a count when
the step counts items (vectors simulated of the total), and the time the step has taken, ticking.
In a file or a pipe, where a live display cannot redraw, a step that is still running after a
couple of seconds gets a line, with the seconds since the command started, and another when it
ends, with the time it took: a log shows what takes the time without a line for every quick step.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress

from .common import err

QUIET_SECONDS = 2.0  # in a log, steps shorter than this leave no line


class Steps:
    """A context manager implementing fpgagen.progress.Progress for the command line."""

    def __init__(self, console: Console = err):
        self.console = console
        self.started = time.perf_counter()
        self.live = console.is_terminal and not console.is_dumb_terminal
        self.display = RichProgress(
            SpinnerColumn(finished_text="[green]✓[/]"),
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            TextColumn("{task.fields[count]}"),
            TimeElapsedColumn(),
            console=console,
        )
        self.task: TaskID | None = None
        self.timer: threading.Timer | None = None
        self.step: tuple[str, float] | None = None  # in a log: the current step and when it began
        self.logged = threading.Event()  # the current step has its line in the log

    def __enter__(self) -> Steps:  # noqa: PYI034 (typing.Self needs Python 3.11; 3.10 is supported)
        if self.live:
            self.display.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._finish_current(done=error is None)
        if self.live:
            self.display.stop()

    def begin(self, text: str, total: int | None = None) -> None:
        self._finish_current(done=True)
        if self.live:
            # Without a total the bar pulses and no count is shown.
            self.task = self.display.add_task(escape(text), total=total, count=_count(0, total))
        else:
            self.step = (text, time.perf_counter())
            self.logged.clear()
            self.timer = threading.Timer(QUIET_SECONDS, self._log, (text,))
            self.timer.daemon = True
            self.timer.start()

    def advance_to(self, completed: int) -> None:
        if self.live and self.task is not None:
            total = self.display.tasks[self.task].total
            self.display.update(self.task, completed=completed, count=_count(completed, total))

    def _log(self, text: str) -> None:
        self.console.print(f"{time.perf_counter() - self.started:7.1f} s  {escape(text)} ...")
        self.logged.set()

    def _finish_current(self, done: bool) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer.join()  # its line, if it is being written, comes before the step's end
            self.timer = None
        if self.step is not None and self.logged.is_set():
            text, began = self.step
            now = time.perf_counter()
            ended = "took" if done else "stopped after"
            self.console.print(f"{now - self.started:7.1f} s  {escape(text)} {ended} {now - began:.1f} s")
        self.step = None
        if self.live and self.task is not None:
            total = self.display.tasks[self.task].total
            if done and total is None:
                self.display.update(self.task, total=1, completed=1)
            elif done:
                self.display.update(self.task, completed=total, count=_count(int(total), total))
            self.display.stop_task(self.task)
        self.task = None


def _count(completed: int, total: float | None) -> str:
    return "" if total is None else f"{completed}/{total:.0f}"
