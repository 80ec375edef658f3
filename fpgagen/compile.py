"""`fpgagen compile`: model file in, complete design folder out.

The front half (fpgagen.prepare: read, quantize, measure activity, schedule), then the engine plan
and the back ends: HLS and RTL, the off-chip weight images, test vectors and the manifest. The
folder is built beside the target and moved into place only when complete.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .atomic import atomic_directory
from .backends.hls.emit import emit_hls
from .backends.rtl.emit import emit_rtl
from .engine import plan_engine
from .errors import FpgagenError
from .frontend import load_model
from .ir import Model
from .manifest import build_manifest, write_manifest
from .prepare import FrontOptions, prepare
from .schedule.boards import Board, load_board
from .schedule.cost_model import Activity, CostModel
from .schedule.scheduler import DEFAULT_BATCH
from .vectors import DEFAULT_COUNT, ChosenInputs, calibration_inputs, golden_vectors, synthetic_inputs, write_vectors


@dataclass(frozen=True)
class CompileOptions:
    board: str | Path = "u280"  # a built-in board's name or the path of a .yaml profile
    precision: str = "w8a16"
    policy: str = "auto"
    objective: str = "throughput"
    calib: Path | None = None
    pes: int | None = None
    act_density: float | None = None
    vectors: int = DEFAULT_COUNT

    @property
    def front(self) -> FrontOptions:
        return FrontOptions(self.precision, self.policy, self.objective, self.calib, self.pes, self.act_density)


@dataclass(frozen=True)
class CompileSummary:
    outdir: Path
    model: Model
    seconds: float
    bytes_written: int


def default_outdir(model_path: Path) -> Path:
    return Path("hls_out") / load_model(model_path).name


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
    board = load_board(options.board)
    prepared = prepare(model_path, board, options.front, step=step)
    model, calib = prepared.model, prepared.calib
    step("choosing test vectors that reach every layer")
    if calib is not None:
        inputs = calibration_inputs(model, calib, options.vectors)
    else:
        inputs = synthetic_inputs(model, options.vectors)
    with atomic_directory(Path(outdir)) as work:
        write_design(model, board, work, inputs, model_path, options.calib, step)
        written = sum(path.stat().st_size for path in work.rglob("*") if path.is_file())
    return CompileSummary(Path(outdir), model, time.perf_counter() - started, written)


def write_design(
    model: Model,
    board: Board,
    folder: Path,
    inputs: np.ndarray | ChosenInputs,
    source: Path | None = None,
    calib: Path | None = None,
    step: Callable[[str], None] = lambda _: None,
) -> None:
    """Write every output of a quantized, scheduled model into `folder` (`source`: its model file,
    recorded so that the design can be re-simulated on new inputs). A schedule made by hand gets
    the cost model's estimate here, with the activity of `inputs`."""
    if not isinstance(inputs, ChosenInputs):
        inputs = ChosenInputs(np.asarray(inputs), "inputs given to write_design")
    if model.schedule.estimate is None:
        cost = CostModel(model, board, Activity.from_calibration(model, inputs.x))
        estimate = cost.estimate(model.schedule.stages, DEFAULT_BATCH, model.schedule.in_lanes)
        model = replace(model, schedule=replace(model.schedule, estimate=estimate))
    step("planning the engine")
    plan = plan_engine(model, board)
    step("writing the HLS project")
    emit_hls(plan, folder / "hls")
    step("writing the RTL")
    emit_rtl(plan, folder / "rtl")
    for stage in plan.sequential:
        (folder / plan.interface.ports[stage.port].image).write_bytes(stage.offchip_image)
    step("computing test vectors")
    write_vectors(model, golden_vectors(model, inputs.x, inputs.source), folder / "vectors")
    write_manifest(build_manifest(plan, source, calib), folder)
