"""How long-running steps (builds, simulations, synthesis) tell the caller what they are doing.

The library reports through this protocol; the command line renders it with rich
(fpgagen/cli/progress.py), and library callers that want silence pass nothing.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def begin(self, text: str, total: int | None = None) -> None:
        """A new step starts (the previous one is over); `total` counts its items when known."""

    def advance_to(self, completed: int) -> None:
        """Items of the current step done so far."""


class Silent:
    """A Progress that shows nothing."""

    def begin(self, text: str, total: int | None = None) -> None:
        pass

    def advance_to(self, completed: int) -> None:
        pass


SILENT = Silent()
