"""`fpgagen compile`: model file in, complete design folder out.

The front half (fpgagen.prepare: read, quantize or choose per-layer formats for --max-error,
measure activity, schedule), then the error against float, test vectors that reach every layer,
the engine plan and the back ends: HLS and RTL, the off-chip weight images, the vectors and the
manifest. The output folder must be missing, empty or an earlier design (outdir.py); the design
appears in it only when complete (atomic.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .accuracy import CALIBRATION, TEST_VECTORS, Accuracy, measure_accuracy
from .atomic import atomic_directory
from .backends.hls.emit import emit_hls
from .backends.rtl.emit import emit_rtl
from .engine import plan_engine
from .errors import FpgagenError
from .golden import flatten_inputs
from .ir import Model
from .manifest import NAME as MANIFEST_NAME
from .manifest import NumericsRecord, build_manifest, write_manifest
from .outdir import check_nothing_foreign, check_output_folder, is_design_entry, written_files
from .prepare import FrontOptions, prepare
from .schedule.activity import Activity
from .schedule.boards import Board, load_board
from .schedule.cost_model import CostModel
from .schedule.scheduler import DEFAULT_BATCH
from .vectors import DEFAULT_COUNT, ChosenInputs, calibration_inputs, golden_vectors, synthetic_inputs, write_vectors


@dataclass(frozen=True)
class CompileOptions:
    board: str | Path = "u280"  # a built-in board's name or the path of a .yaml profile
    front: FrontOptions = field(default_factory=FrontOptions)  # precision, schedule, calibration, error bound
    vectors: int = DEFAULT_COUNT


@dataclass(frozen=True)
class CompileSummary:
    outdir: Path
    model: Model
    seconds: float
    bytes_written: int
    numerics: NumericsRecord
    clock_note: str | None = None  # set when the engine is credited with less than the board's clock


def compile_model(
    model_path: Path,
    outdir: Path,
    options: CompileOptions = CompileOptions(),
    step: Callable[[str], None] = lambda _: None,
) -> CompileSummary:
    """Compile `model_path` into `outdir` (replaced atomically); `step` hears each stage's name."""
    started = time.perf_counter()
    if options.vectors < 1:
        raise FpgagenError(f"--vectors {options.vectors}: at least one test vector is needed")
    options.front.chosen_precision()  # a bad precision is refused before any work
    calib_path = options.front.calib
    target = check_output_folder(outdir, [model_path] + ([calib_path] if calib_path else []))
    prepared = prepare(model_path, load_board(options.board), options.front, step=step)
    model, calib, board = prepared.model, prepared.calib, prepared.board
    step("measuring the error against float")
    accuracy = measure_accuracy(model, calib, CALIBRATION) if calib is not None else None
    numerics = NumericsRecord(options.front.max_error, prepared.goal, prepared.margin, accuracy)
    step("choosing test vectors that reach every layer")
    if calib is not None:
        inputs = calibration_inputs(model, calib, options.vectors)
    else:
        inputs = synthetic_inputs(model, options.vectors)
    with atomic_directory(target, replaceable=is_design_entry, last=MANIFEST_NAME) as work:
        numerics = write_design(model, board, work, inputs, model_path, calib_path, step, numerics)
        written = sum(path.stat().st_size for path in work.rglob("*") if path.is_file())
        check_nothing_foreign(outdir)  # again: the user may have added files while it worked
    seconds = time.perf_counter() - started
    return CompileSummary(Path(outdir), model, seconds, written, numerics, prepared.clock_note)


def write_design(
    model: Model,
    board: Board,
    folder: Path,
    inputs: np.ndarray | ChosenInputs,
    source: Path | None = None,
    calib: Path | None = None,
    step: Callable[[str], None] = lambda _: None,
    numerics: NumericsRecord | None = None,
) -> NumericsRecord:
    """Write every output of a quantized, scheduled model into `folder`, which should be empty: the
    manifest lists every file in it as the design's (`source`: the model file,
    recorded so that the design can be re-simulated on new inputs). A schedule made by hand gets
    the cost model's estimate here, with the activity of `inputs`. Without a measured error
    (`numerics`), the error and saturation are measured on `inputs`; the record is returned."""
    if not isinstance(inputs, ChosenInputs):
        inputs = ChosenInputs(np.asarray(inputs), "inputs given to write_design")
    if model.schedule.estimate is None:
        cost = CostModel(model, board, Activity.from_calibration(model, inputs.x))
        estimate = cost.estimate(
            model.schedule.stages, DEFAULT_BATCH, model.schedule.in_lanes, model.schedule.deep_channels
        )
        model = replace(model, schedule=replace(model.schedule, estimate=estimate))
    step("planning the engine")
    plan = plan_engine(model, board)
    step("writing the HLS project")
    emit_hls(plan, folder / "hls")
    step("writing the RTL")
    emit_rtl(plan, folder / "rtl")
    for stage in plan.sequential:
        for port, image in zip(stage.ports, stage.offchip_images):
            (folder / plan.interface.ports[port].image).write_bytes(image)
    if plan.interface.load_port is not None:
        (folder / plan.interface.load_port.image).write_bytes(plan.load_image)
    step("computing test vectors")
    write_vectors(model, golden_vectors(model, inputs.x, inputs.source, inputs.calibration_rows), folder / "vectors")
    numerics = numerics or NumericsRecord(None, None, None, None)
    if numerics.accuracy is None:
        numerics = replace(numerics, accuracy=_test_vector_accuracy(model, inputs.x))
    write_manifest(build_manifest(plan, source, calib, numerics, written_files(folder)), folder)
    return numerics


def _test_vector_accuracy(model: Model, inputs: np.ndarray) -> Accuracy:
    return measure_accuracy(model, flatten_inputs(model, inputs), TEST_VECTORS)
