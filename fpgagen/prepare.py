"""The front half of the compiler: a model file to a quantized, scheduled model.

read -> quantize -> measure activity -> schedule. `fpgagen compile` goes on from here to the back
ends; `fpgagen schedule` prints the result; a design folder read back (fpgagen.design) goes through
the same steps with the schedule it recorded, so it computes exactly what its hardware does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .arrays import read_array
from .errors import FpgagenError
from .frontend import load_model
from .golden import flatten_inputs
from .ir import Model, Schedule
from .numerics import parse_precision
from .passes.quantize import quantize
from .schedule.apply import apply_schedule
from .schedule.boards import Board
from .schedule.cost_model import Activity
from .schedule.scheduler import DEFAULT_BATCH, schedule


@dataclass(frozen=True)
class FrontOptions:
    """What the front half needs besides the model file and the board."""

    precision: str = "w8a16"
    policy: str = "auto"
    objective: str = "throughput"
    calib: Path | None = None
    pes: int | None = None
    act_density: float | None = None
    batch: int = DEFAULT_BATCH


@dataclass(frozen=True, eq=False)
class Prepared:
    model: Model  # quantized and scheduled
    calib: np.ndarray | None  # the calibration inputs, flattened (None without --calib)
    activity: Activity


def prepare(
    model_path: Path,
    board: Board,
    options: FrontOptions = FrontOptions(),
    recorded: Schedule | None = None,
    step: Callable[[str], None] = lambda _: None,
) -> Prepared:
    """Read, quantize and schedule `model_path` for `board`; with `recorded`, apply that schedule
    instead of choosing one. `step` hears each step's name."""
    precision = parse_precision(options.precision)
    if precision is None:
        raise FpgagenError(
            f"precision {options.precision} has no hardware; choose a fixed-point precision such as w8a16"
        )
    step("reading the model")
    model = load_model(model_path)
    calib = None
    if options.calib is not None:
        calib = flatten_inputs(model, read_array(options.calib), str(options.calib))
    step("quantizing")
    model = quantize(model, precision, calib)
    if options.act_density is not None:
        activity = Activity.uniform(model, options.act_density)
    elif calib is not None:
        activity = Activity.from_calibration(model, calib)
    else:
        activity = Activity.uniform(model)
    step("scheduling")
    if recorded is not None:
        model = apply_schedule(model, recorded)
    else:
        model = schedule(model, board, options.policy, options.objective, activity, options.batch, options.pes)
    return Prepared(model, calib, activity)
