"""One point of a sweep, as a Dask task: prune, compile, measure the error, verify; a record back.

The task runs on a worker that may be another machine, so it reads nothing from the client's
disk: the model, the calibration inputs and custom board profiles travel as data (`Inputs`) and
are written into the point's folder. That folder is a temporary one, or DIR/points/<id> when
the designs are kept, which needs DIR on a filesystem the workers share. Whatever happens, the
task returns a record (plain JSON data): a point that fails says why and the sweep goes on.
"""

from __future__ import annotations

import json
import socket
import tempfile
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..arrays import read_array
from ..atomic import atomic_file
from ..backends.hls import run_csim
from ..compile import CompileOptions, compile_model
from ..errors import CheckFailed, DoesNotFit, FpgagenError
from ..frontend import load_model
from ..frontend.onnx_writer import write_onnx
from ..golden import GoldenModel, flatten_inputs
from ..ir import Model
from ..manifest import read_manifest
from ..outdir import write_listing
from ..passes.prune import prune
from ..prepare import FrontOptions
from ..results import CSIM_RESULTS, SIM_RESULTS, SYNTH_RESULTS
from ..schedule.estimates import DesignEstimate
from ..simulate import run_rtl_simulation
from ..synth import run_synthesis
from ..vectors import default_inputs
from .grid import Point
from .records import POINTS, RECORDS

CHECKS = ("csim", "sim", "synth")
_SIM_FIGURES = ("passed", "simulator", "vectors", "total_cycles", "cycles_per_vector", "first_output_cycles",
                "first_mismatch")  # fmt: skip
ERROR_INPUTS = 256  # random inputs the error against float is measured on, without calibration inputs
# Statuses of a record.
OK, CHECK_FAILED, DOES_NOT_FIT, ERROR = "ok", "check failed", "does not fit", "error"


@dataclass(frozen=True)
class Inputs:
    """What every point needs from the client's machine, sent to the workers once as data."""

    model: bytes  # an ONNX file
    calib: bytes | None  # a .npy file, already checked against the model
    boards: dict[str, str]  # custom board profiles: the path given -> its YAML text


@dataclass(frozen=True)
class Settings:
    """What is the same for every point of a sweep."""

    run: str  # the sweep's id, also in DIR/sweep.json: how a worker recognizes DIR
    checks: tuple[str, ...]  # of CHECKS, in that order
    vectors: int  # test vectors per design
    simulator: str  # for the sim check
    keep: Path | None  # DIR (absolute) when the designs are kept under DIR/points


def new_record(point: Point, worker: str | None = None) -> dict:
    """A point's record before anything is known of it."""
    return {
        "id": point.id,
        "label": point.label(),
        "settings": point.settings(),
        "status": None,
        "fits": None,  # unknown until the scheduler has decided
        "reason": None,
        "short": [],
        "design": None,
        "estimate": None,
        "error": None,
        "checks": {},
        "cycles": None,  # per vector, measured by RTL simulation
        "seconds": {},
        "worker": worker,
        "folder": None,  # the kept design, relative to DIR
    }


def run_point(point: Point, settings: Settings, inputs: Inputs) -> dict:
    """The record of `point`: its settings, whether and how it fits, its figures, its checks."""
    started = time.perf_counter()
    record = new_record(point, _worker_name())
    try:
        with _point_folder(point, settings) as folder:
            _build_and_check(point, settings, inputs, folder, record)
        failures = [_failure(name, check) for name, check in record["checks"].items() if not check["passed"]]
        record.update(status=CHECK_FAILED if failures else OK, reason="; ".join(failures) or None)
    except DoesNotFit as exc:
        record.update(status=DOES_NOT_FIT, fits=False, reason=str(exc), short=list(exc.short))
    except (FpgagenError, CheckFailed) as exc:
        record.update(status=ERROR, reason=str(exc))
    except Exception as exc:  # noqa: BLE001  (any failure of one point is recorded; the sweep goes on)
        record.update(status=ERROR, reason=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())
    record["seconds"]["total"] = time.perf_counter() - started
    return record


def _build_and_check(point: Point, settings: Settings, inputs: Inputs, folder: Path, record: dict) -> None:
    """Fill `record` step by step, so that a failure keeps what was found before it."""
    seconds = record["seconds"]
    began = time.perf_counter()
    model_path, reference = _model_file(point, inputs, folder)
    calib_path = None
    if inputs.calib is not None:
        calib_path = folder / "calib.npy"
        calib_path.write_bytes(inputs.calib)
    board = point.board
    if board in inputs.boards:
        board = str(folder / "board.yaml")
        Path(board).write_text(inputs.boards[point.board], encoding="utf-8")
    # max_error is handed over only when the grid has it, so that compile alone decides what it means.
    bound = {} if point.max_error is None else {"max_error": point.max_error}
    front = FrontOptions(precision=point.precision, policy=point.schedule, calib=calib_path, pes=point.pes, **bound)
    options = CompileOptions(board=board, front=front, vectors=settings.vectors)
    design = folder / "design"
    summary = compile_model(model_path, design, options)
    seconds["compile"] = time.perf_counter() - began
    record["fits"] = True
    if settings.keep is not None:
        record["folder"] = design.relative_to(settings.keep).as_posix()
    record["design"] = _design(summary.model)
    record["estimate"] = _estimate(summary.model.schedule.estimate)

    began = time.perf_counter()
    calib = read_array(calib_path)
    record["error"] = error_against_float(reference, summary.model, calib)
    seconds["error"] = time.perf_counter() - began

    for check in settings.checks:
        began = time.perf_counter()
        record["checks"][check] = _CHECKS[check](design, settings)
        seconds[check] = time.perf_counter() - began
    sim = record["checks"].get("sim")
    if sim is not None and sim["passed"]:
        record["cycles"] = sim["cycles_per_vector"]


def _model_file(point: Point, inputs: Inputs, folder: Path) -> tuple[Path, Model]:
    """The point's model file in `folder` (pruned if the point prunes) and the float model that
    the design's error is measured against: the model as given, before pruning."""
    path = folder / "model.onnx"
    path.write_bytes(inputs.model)
    reference = load_model(path)
    if point.method is not None:
        write_onnx(prune(reference, point.sparsity, point.method), path)
    return path, reference


def error_against_float(reference: Model, design: Model, calib: np.ndarray | None) -> dict:
    """The design's fixed-point outputs against the float model's: on the calibration inputs, else
    on ERROR_INPUTS random inputs in the design's input range (as its test vectors)."""
    if calib is not None:
        x = flatten_inputs(reference, calib, "calibration inputs")
    else:
        x = default_inputs(design, ERROR_INPUTS, seed=0)
    want = GoldenModel(reference).predict(x)
    got = GoldenModel(design).predict(x)
    return {
        "inputs": int(x.shape[0]),
        "max_abs": float(np.max(np.abs(got - want))),
        "argmax_agreement": float(np.mean(np.argmax(got, axis=1) == np.argmax(want, axis=1))),
    }


def _design(model: Model) -> dict:
    stages = model.schedule.stages
    return {
        "layers": len(model.layers),
        "nnz": model.nnz,
        "stages": [{"mode": s.mode, "layers": list(s.layers), "pes": s.pes} for s in stages],
    }


def _estimate(estimate: DesignEstimate) -> dict:
    """The cost model's figures, with the share of the board its scarcest resource takes."""
    used, budget = estimate.resources.as_dict(), estimate.budget.as_dict()
    shares = {kind: used[kind] / budget[kind] for kind in used if budget[kind] > 0}
    scarcest = max(shares, key=shares.get)
    return {
        "throughput": estimate.steady_vectors_per_s,
        "interval": estimate.interval,
        "latency": estimate.latency,
        "latency_us": estimate.latency / estimate.board.clock_mhz,
        "clock_mhz": estimate.board.clock_mhz,
        "resources": used,
        "budget": budget,
        "utilization": shares[scarcest],
        "scarcest": scarcest,
    }


def _csim(design: Path, settings: Settings) -> dict:
    # One g++ job: the sweep's parallelism is one point per core.
    result = run_csim(design, design / "vectors", jobs=1)
    found = result.to_json()
    _write_json(design / CSIM_RESULTS, found)
    return found


def _sim(design: Path, settings: Settings) -> dict:
    results = design / SIM_RESULTS
    found = run_rtl_simulation(design, design / "vectors", results, simulator=settings.simulator)
    # the whole-design figures; the per-layer counters stay in the design's sim_results.json
    return {key: found[key] for key in _SIM_FIGURES}


def _synth(design: Path, settings: Settings) -> dict:
    result = run_synthesis(design)
    estimate = read_manifest(design)["estimate"]["totals"]["resources"]
    found = asdict(result) | {"resources": result.resources(), "estimate": estimate}
    _write_json(design / SYNTH_RESULTS, found)
    return {"passed": result.latches == 0, "resources": result.resources(), "latches": result.latches,
            "seconds": result.seconds}  # fmt: skip


_CHECKS = {"csim": _csim, "sim": _sim, "synth": _synth}


def _failure(name: str, check: dict) -> str:
    """What a failed check found."""
    if name == "synth":
        return f"synth: the netlist has {check['latches']} latch(es)"
    mismatch = check.get("mismatch") or check.get("first_mismatch")
    if mismatch:
        where = ", ".join(f"{key} {mismatch[key]}" for key in ("layer", "vector", "index", "expected", "got"))
        return f"{name} differs from the golden model: {where}"
    return f"{name} failed: {check.get('error') or 'no verdict'}"


def _write_json(path: Path, data: dict) -> None:
    with atomic_file(path) as work:
        work.write_text(json.dumps(data, indent=2) + "\n")


@contextmanager
def _point_folder(point: Point, settings: Settings) -> Iterator[Path]:
    if settings.keep is None:
        with tempfile.TemporaryDirectory(prefix=f"fpgagen-sweep-{point.id}-") as folder:
            yield Path(folder)
        return
    if not sweep_visible(settings.keep, settings.run):
        raise FpgagenError(
            f"--keep-designs: {settings.keep} is not this sweep's folder on {socket.gethostname()}; designs can "
            "be kept only in a folder the workers share with the machine that runs the sweep"
        )
    folder = settings.keep / POINTS / point.id
    folder.mkdir(parents=True)
    try:
        yield folder
    finally:
        write_listing(folder)  # what a later sweep into DIR may replace: the point's files, as written


def sweep_visible(outdir: Path, run: str) -> bool:
    """Whether `outdir` on this machine is the folder of sweep `run` (its sweep.json says so)."""
    try:
        return json.loads((Path(outdir) / RECORDS).read_text(encoding="utf-8")).get("run") == run
    except (OSError, ValueError):
        return False


def _worker_name() -> str:
    from distributed import get_worker

    try:
        return get_worker().address
    except ValueError:  # run outside a Dask worker
        return socket.gethostname()
