"""A sweep: every point of the grid a task on Dask, records kept as they finish.

The model, calibration inputs and custom boards are read here, checked, and sent to the workers
once. Each finished point is appended to DIR/sweep.json at once; a Ctrl-C cancels the tasks not
yet finished and keeps the records in. DIR/sweep.html is written at the end, complete or not.
"""

from __future__ import annotations

import logging
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from distributed import Client, Future, as_completed

from .. import __version__
from ..arrays import read_array
from ..frontend import load_model
from ..frontend.onnx_writer import write_onnx
from ..golden import flatten_inputs
from ..ir import Model
from ..schedule.boards import builtin_boards
from .grid import Grid, Point
from .page import write_page
from .point import ERROR, ERROR_INPUTS, Inputs, Settings, new_record, run_point
from .records import COMPLETE, INTERRUPTED, SweepLog


@dataclass(frozen=True)
class Sweep:
    """A sweep as the user asked for it."""

    model: Path
    grid: Grid
    checks: tuple[str, ...]
    vectors: int
    simulator: str
    calib: Path | None = None
    keep_designs: bool = False


@dataclass(frozen=True)
class Prepared:
    """A sweep checked and ready to send: its model, what the workers need, its id."""

    sweep: Sweep
    model: Model
    inputs: Inputs
    run: str


def prepare(sweep: Sweep) -> Prepared:
    """Read and check everything the sweep needs from this machine's disk (errors are bad input)."""
    model = load_model(sweep.model)
    if sweep.model.is_dir():  # a Graph Challenge folder travels as the ONNX it reads as
        with tempfile.TemporaryDirectory(prefix="fpgagen-sweep-") as folder:
            write_onnx(model, Path(folder) / "model.onnx")
            model_bytes = (Path(folder) / "model.onnx").read_bytes()
    else:
        model_bytes = sweep.model.read_bytes()
    calib_bytes = None
    if sweep.calib is not None:
        flatten_inputs(model, read_array(sweep.calib), str(sweep.calib))
        calib_bytes = sweep.calib.read_bytes()
    boards = {
        board: Path(board).read_text(encoding="utf-8") for board in sweep.grid.boards if board not in builtin_boards()
    }
    return Prepared(sweep, model, Inputs(model_bytes, calib_bytes, boards), uuid.uuid4().hex)


def start_log(prepared: Prepared, outdir: Path, cluster: str) -> SweepLog:
    """DIR/sweep.json with the sweep's settings and no records yet."""
    sweep, model = prepared.sweep, prepared.model
    error_inputs = (
        f"the {sweep.calib.name} inputs"
        if sweep.calib
        else f"{ERROR_INPUTS} random inputs in each design's input range"
    )
    header = {
        "fpgagen": __version__,
        "run": prepared.run,
        "model": {
            "path": str(sweep.model.resolve()),
            "name": model.name,
            "layers": len(model.layers),
            "nnz": model.nnz,
        },
        "grid": sweep.grid.to_json(),
        "checks": list(sweep.checks),
        "vectors": sweep.vectors,
        "calib": str(sweep.calib.resolve()) if sweep.calib else None,
        "error_inputs": error_inputs,
        "cluster": cluster,
        "designs": "points/<id>/design" if sweep.keep_designs else None,
    }
    return SweepLog(outdir, header, len(sweep.grid.points()))


def run_sweep(
    prepared: Prepared, log: SweepLog, client: Client, on_record: Callable[[dict], None] = lambda _: None
) -> None:
    """Run every point on `client`'s cluster, add each record to `log` as it finishes and tell
    `on_record`; write the page at the end. KeyboardInterrupt cancels what is left, keeps the
    records in, writes the page and is raised again."""
    sweep = prepared.sweep
    outdir = log.path.parent.resolve()
    settings = Settings(
        run=prepared.run, checks=sweep.checks, vectors=sweep.vectors, simulator=sweep.simulator,
        keep=outdir if sweep.keep_designs else None,
    )  # fmt: skip
    futures: dict[Future, Point] = {}
    try:
        inputs = client.scatter(prepared.inputs, hash=False)
        for point in sweep.grid.points():
            key = f"fpgagen-sweep-{prepared.run}-{point.id}"
            futures[client.submit(run_point, point, settings, inputs, key=key, pure=False)] = point
        for future in as_completed(futures, loop=client.loop):
            record = _record(future, futures[future])
            log.add(record)
            on_record(record)
    except KeyboardInterrupt:
        # A terminal's Ctrl-C reaches a local cluster's workers too; the scheduler's complaints
        # about the workers it loses are no news.
        logging.getLogger("distributed").setLevel(logging.CRITICAL)
        client.cancel(list(futures), force=True)
        log.finish(INTERRUPTED)
        write_page(outdir, log.data())
        raise
    log.finish(COMPLETE)
    write_page(outdir, log.data())


def _record(future: Future, point: Point) -> dict:
    """The point's record, or one that says why its task never returned (a worker died, say)."""
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001  (whatever the cluster raises, the point is recorded)
        return new_record(point) | {
            "status": ERROR,
            "reason": f"the task failed on the cluster: {type(exc).__name__}: {exc}",
        }
