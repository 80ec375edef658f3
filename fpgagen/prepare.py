"""The front half of the compiler: a model file to a quantized, scheduled model.

read -> quantize (or choose per-layer formats within --max-error) -> measure activity -> schedule
-> relabel (each layer's outputs given to its PEs, fpgagen.passes.relabel).
`fpgagen compile` goes on from here to the back ends; `fpgagen schedule` prints the result; a
design folder read back (fpgagen.design) goes through the same steps with the formats and the
schedule it recorded, so it computes exactly what its hardware does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .arrays import read_calibration
from .engine.clock import clock_note, engine_clocked
from .errors import FpgagenError
from .frontend import load_model
from .ir import Model, Schedule
from .numerics import DEFAULT_PRECISION, Precision, parse_precision
from .passes.formats import MAX_PRECISION, check_max_error, choose_formats
from .passes.quantize import CALIBRATION_MARGIN, Formats, apply_formats, quantize
from .passes.relabel import relabel
from .schedule.activity import Activity
from .schedule.apply import apply_schedule
from .schedule.boards import Board
from .schedule.scheduler import DEFAULT_BATCH, schedule


@dataclass(frozen=True)
class FrontOptions:
    """What the front half needs besides the model file and the board."""

    precision: str | None = None  # DEFAULT_PRECISION; with max_error the widest allowed, MAX_PRECISION
    policy: str = "auto"
    objective: str = "throughput"
    calib: Path | None = None
    pes: int | None = None
    act_density: float | None = None
    batch: int = DEFAULT_BATCH
    max_error: float | None = None  # choose per-layer formats within this error (passes/formats.py)

    def chosen_precision(self) -> Precision:
        """The precision asked for (the widest allowed with `max_error`), refused with the error
        bound when either is not one fpgagen can build: before any work."""
        if self.max_error is not None:
            check_max_error(self.max_error)
        default = MAX_PRECISION.name if self.max_error is not None else DEFAULT_PRECISION
        return parse_precision(self.precision or default, hardware=True)


@dataclass(frozen=True)
class Recorded:
    """The decisions a compiled design recorded: applied instead of made again."""

    formats: Formats
    precision: Precision
    schedule: Schedule


@dataclass(frozen=True, eq=False)
class Prepared:
    model: Model  # quantized and scheduled
    board: Board  # the board at the clock the engine is credited with (fpgagen.engine.clock)
    calib: np.ndarray | None  # the calibration inputs, flattened (None without --calib)
    activity: Activity | None  # what the scheduler assumed (None for a recorded schedule)
    goal: float | None = None  # the error the format search kept within
    margin: float | None = None  # measured ranges were widened by this; None: ranges were assumed
    clock_note: str | None = None  # set when the engine is credited with less than the board's clock


def prepare(
    model_path: Path,
    board: Board,
    options: FrontOptions = FrontOptions(),
    recorded: Recorded | None = None,
    step: Callable[[str], None] = lambda _: None,
) -> Prepared:
    """Read, quantize and schedule `model_path` for `board`, at the clock the engine is credited
    with there; with `recorded`, apply its formats and schedule instead of choosing them. `step`
    hears each step's name."""
    asked, board = board, engine_clocked(board)
    precision = options.chosen_precision() if recorded is None else recorded.precision
    if options.max_error is not None and options.calib is None:
        raise FpgagenError("--max-error needs --calib: the error is measured on the calibration inputs")
    step("reading the model")
    model = load_model(model_path)
    calib = read_calibration(model, options.calib)
    goal = margin = None
    if recorded is not None:
        if len(model.layers) != len(recorded.formats.layers):
            raise FpgagenError(
                f"{model_path}: has {len(model.layers)} layers; the design was compiled from another model"
            )
        model = apply_formats(model, recorded.formats, precision)
        return Prepared(relabel(apply_schedule(model, recorded.schedule)), board, calib, None)
    if options.max_error is not None:
        step(f"choosing formats for an error of at most {100 * options.max_error:g}% of the output range")
        choice = choose_formats(model, calib, options.max_error, precision)
        model, margin, goal = choice.model, choice.margin, choice.goal
    else:
        step("quantizing")
        model = quantize(model, precision, calib)
        margin = CALIBRATION_MARGIN if calib is not None else None
    if options.act_density is not None:
        activity = Activity.uniform(model, options.act_density)
    elif calib is not None:
        activity = Activity.from_calibration(model, calib)
    else:
        activity = Activity.uniform(model)
    step("scheduling")
    model = schedule(model, board, options.policy, options.objective, activity, options.batch, options.pes)
    return Prepared(relabel(model), board, calib, activity, goal, margin, clock_note(asked, board))
