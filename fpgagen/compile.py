"""`fpgagen compile`: model file in, complete design folder out.

read -> quantize (or choose per-layer formats for --max-error) -> measure the error against float
-> measure activity -> schedule -> plan -> emit HLS and RTL, write the off-chip weight images,
test vectors and manifest. The output folder must be missing, empty or an earlier design
(outdir.py); the design appears in it only when complete (atomic.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .accuracy import CALIBRATION, TEST_VECTORS, Accuracy, measure_accuracy
from .arrays import read_calibration
from .atomic import atomic_directory
from .backends.engine_plan import plan_engine
from .backends.hls.emit import emit_hls
from .backends.rtl.emit import emit_rtl
from .errors import FpgagenError
from .frontend import load_model
from .golden import flatten_inputs
from .ir import Model
from .manifest import NAME as MANIFEST_NAME
from .manifest import NumericsRecord, build_manifest, write_manifest
from .numerics import DEFAULT_PRECISION, parse_precision
from .outdir import check_output_folder, is_design_entry
from .passes.formats import MAX_PRECISION, choose_formats
from .passes.quantize import CALIBRATION_MARGIN, quantize
from .schedule.boards import Board, load_board
from .schedule.cost_model import Activity, CostModel
from .schedule.scheduler import DEFAULT_BATCH, schedule
from .vectors import DEFAULT_COUNT, default_inputs, golden_vectors, write_vectors


@dataclass(frozen=True)
class CompileOptions:
    board: str = "u280"
    precision: str | None = None  # DEFAULT_PRECISION; with max_error the widest allowed, MAX_PRECISION
    policy: str = "auto"
    objective: str = "throughput"
    calib: Path | None = None
    pes: int | None = None
    act_density: float | None = None
    vectors: int = DEFAULT_COUNT
    max_error: float | None = None  # choose per-layer formats within this error (passes/formats.py)


@dataclass(frozen=True)
class CompileSummary:
    outdir: Path
    model: Model
    seconds: float
    bytes_written: int
    numerics: NumericsRecord


def compile_model(
    model_path: Path,
    outdir: Path,
    options: CompileOptions = CompileOptions(),
    step: Callable[[str], None] = lambda _: None,
) -> CompileSummary:
    """Compile `model_path` into `outdir` (replaced atomically); `step` hears each stage's name."""
    started = time.perf_counter()
    default = MAX_PRECISION.name if options.max_error is not None else DEFAULT_PRECISION
    precision = parse_precision(options.precision or default)
    if precision is None:
        raise FpgagenError("precision float has no hardware; compile with a fixed-point precision such as w8a16")
    if options.vectors < 1:
        raise FpgagenError(f"--vectors {options.vectors}: at least one test vector is needed")
    if options.max_error is not None and options.calib is None:
        raise FpgagenError("--max-error needs --calib: the error is measured on the calibration inputs")
    target = check_output_folder(outdir, [model_path] + ([options.calib] if options.calib else []))
    board = load_board(options.board)
    step("reading the model")
    model = load_model(model_path)
    calib = read_calibration(model, options.calib)
    if options.max_error is not None:
        step(f"choosing formats for an error of at most {options.max_error:g}")
        choice = choose_formats(model, calib, options.max_error, precision)
        model, margin, goal = choice.model, choice.margin, choice.goal
    else:
        step("quantizing")
        model, goal = quantize(model, precision, calib), None
        margin = CALIBRATION_MARGIN if calib is not None else None
    if options.act_density is not None:
        activity = Activity.uniform(model, options.act_density)
    elif calib is not None:
        activity = Activity.from_calibration(model, calib)
    else:
        activity = Activity.uniform(model)
    step("scheduling")
    model = schedule(model, board, options.policy, options.objective, activity, pes=options.pes)
    inputs = calib[: options.vectors] if calib is not None else default_inputs(model, options.vectors)
    step("measuring the error against float")
    accuracy = measure_accuracy(model, calib, CALIBRATION) if calib is not None else None
    numerics = NumericsRecord(options.max_error, goal, margin, accuracy)
    with atomic_directory(target, replaceable=is_design_entry, last=MANIFEST_NAME) as work:
        numerics = write_design(model, board, work, inputs, model_path, options.calib, step, numerics)
        written = sum(path.stat().st_size for path in work.rglob("*") if path.is_file())
    return CompileSummary(Path(outdir), model, time.perf_counter() - started, written, numerics)


def write_design(
    model: Model,
    board: Board,
    folder: Path,
    inputs: np.ndarray,
    source: Path | None = None,
    calib: Path | None = None,
    step: Callable[[str], None] = lambda _: None,
    numerics: NumericsRecord | None = None,
) -> NumericsRecord:
    """Write every output of a quantized, scheduled model into `folder` (`source`: its model file,
    recorded so that the design can be re-simulated on new inputs). A schedule made by hand gets
    the cost model's estimate here, with the activity of `inputs`. Without a measured error
    (`numerics`), the error and saturation are measured on `inputs`; the record is returned."""
    if model.schedule.estimate is None:
        cost = CostModel(model, board, Activity.from_calibration(model, inputs))
        estimate = cost.estimate(model.schedule.stages, DEFAULT_BATCH)
        model = replace(model, schedule=replace(model.schedule, estimate=estimate))
    step("planning the engine")
    plan = plan_engine(model)
    step("writing the HLS project")
    emit_hls(model, folder / "hls", plan)
    step("writing the RTL")
    emit_rtl(model, folder / "rtl", plan)
    for stage in plan.sequential:
        (folder / f"weights{stage.port}.bin").write_bytes(stage.offchip_image)
    step("computing test vectors")
    write_vectors(model, golden_vectors(model, inputs), folder / "vectors")
    numerics = numerics or NumericsRecord(None, None, None, None)
    if numerics.accuracy is None:
        numerics = replace(numerics, accuracy=_test_vector_accuracy(model, inputs))
    write_manifest(build_manifest(model, plan, board, source, calib, numerics), folder)
    return numerics


def _test_vector_accuracy(model: Model, inputs: np.ndarray) -> Accuracy:
    return measure_accuracy(model, flatten_inputs(model, inputs), TEST_VECTORS)
