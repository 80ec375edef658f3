"""The grid of a sweep: its axes, checked before anything runs, and the points they span.

A point is one combination of board, precision, schedule policy, PEs, pruning level and error
bound; its id (001, 002, ...) follows the grid's order, boards outermost.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass

from ..errors import FpgagenError
from ..numerics import parse_precision
from ..passes.formats import check_max_error
from ..passes.prune import checked_sparsity, parse_method
from ..schedule.apply import FORCED_PES
from ..schedule.boards import load_board
from ..schedule.scheduler import POLICIES


@dataclass(frozen=True)
class Point:
    id: str
    board: str  # a built-in board's name or the path of a .yaml profile, as given
    precision: str
    schedule: str  # the policy: auto, dataflow or sequential
    pes: int | None = None  # PEs forced in every stage; None: the scheduler's choice
    sparsity: float | None = None  # None with a method: the sparsity nm:N:M implies
    method: str | None = None  # pruning method; None: the model as it is
    max_error: float | None = None  # error bound handed to compile; None: the precision as given

    def settings(self) -> dict:
        return {key: value for key, value in asdict(self).items() if key != "id"}

    def label(self) -> str:
        parts = [self.board, self.precision, self.schedule]
        if self.pes is not None:
            parts.append(f"P={self.pes}")
        if self.method is not None:
            parts.append(self.method if self.sparsity is None else f"{self.method} {self.sparsity:g}")
        if self.max_error is not None:
            parts.append(f"max error {self.max_error:g}")
        return " ".join(parts)


@dataclass(frozen=True)
class Grid:
    boards: tuple[str, ...]
    precisions: tuple[str, ...]
    schedules: tuple[str, ...]
    pes: tuple[int | None, ...] = (None,)
    sparsities: tuple[float | None, ...] = (None,)
    method: str | None = None
    max_errors: tuple[float | None, ...] = (None,)

    def points(self) -> list[Point]:
        combinations = list(
            itertools.product(self.boards, self.precisions, self.schedules, self.pes, self.sparsities, self.max_errors)
        )
        width = max(3, len(str(len(combinations))))
        return [
            Point(f"{number:0{width}d}", board, precision, policy, pes, sparsity, self.method, max_error)
            for number, (board, precision, policy, pes, sparsity, max_error) in enumerate(combinations, 1)
        ]

    def to_json(self) -> dict:
        return asdict(self)


def parse_grid(
    boards: str,
    precisions: str,
    schedules: str,
    pes: str | None = None,
    sparsities: str | None = None,
    method: str | None = None,
    max_errors: str | None = None,
) -> Grid:
    """The grid from the comma-separated values of the command's options, every value checked:
    an unknown board, a precision without hardware, a sparsity outside [0, 1) are refused here."""
    board_list = _items(boards, "--boards")
    for board in board_list:
        load_board(board)
    precision_list = _items(precisions, "--precisions")
    for precision in precision_list:
        parse_precision(precision, hardware=True)
    schedule_list = _items(schedules, "--schedules")
    for policy in schedule_list:
        if policy not in POLICIES:
            raise FpgagenError(f"--schedules {policy}: not a schedule policy; use {', '.join(POLICIES)}")
    pruning = method is not None or sparsities is not None
    return Grid(
        boards=tuple(board_list),
        precisions=tuple(precision_list),
        schedules=tuple(schedule_list),
        pes=_pes(pes),
        sparsities=_sparsities(sparsities, method),
        method=parse_method(method or "magnitude").describe() if pruning else None,
        max_errors=_max_errors(max_errors),
    )


def _items(text: str, option: str) -> list[str]:
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise FpgagenError(f"{option} {text!r}: an empty value; give values separated by commas, such as a,b")
    repeated = sorted({item for item in items if items.count(item) > 1})
    if repeated:
        raise FpgagenError(f"{option} {text!r}: {', '.join(repeated)} given more than once")
    return items


def _number(item: str, option: str, kind: type) -> float | int:
    try:
        return kind(item)
    except ValueError:
        raise FpgagenError(f"{option} {item!r}: not a {'whole number' if kind is int else 'number'}") from None


def _pes(text: str | None) -> tuple[int | None, ...]:
    if text is None:
        return (None,)
    possible = FORCED_PES
    values = [_number(item, "--pes", int) for item in _items(text, "--pes")]
    for value in values:
        if value not in possible:
            raise FpgagenError(f"--pes {value}: a stage has one of {', '.join(map(str, possible))} PEs")
    return tuple(values)


def _sparsities(text: str | None, method: str | None) -> tuple[float | None, ...]:
    """Pruning levels; --method alone (nm:N:M) is one level, --sparsity alone prunes by magnitude."""
    if text is None and method is None:
        return (None,)
    chosen = parse_method(method or "magnitude")
    if text is None:
        checked_sparsity(None, chosen)  # refuses magnitude and balanced without a sparsity
        return (None,)
    values = [_number(item, "--sparsity", float) for item in _items(text, "--sparsity")]
    for value in values:
        checked_sparsity(value, chosen)
    return tuple(values)


def _max_errors(text: str | None) -> tuple[float | None, ...]:
    if text is None:
        return (None,)
    values = [_number(item, "--max-error", float) for item in _items(text, "--max-error")]
    for value in values:
        check_max_error(value)
    return tuple(values)
