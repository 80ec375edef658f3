"""A compiled design folder read back: its manifest, its board, and the model it was made from.

The manifest records the model file, precision, calibration inputs, board and schedule; the same
front half (fpgagen.prepare) with the recorded schedule gives the same quantized, scheduled model,
so golden outputs computed from it are exactly what the design's hardware computes, on any inputs.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from .errors import FpgagenError
from .ir import Model, Schedule, Stage
from .manifest import NAME, read_manifest
from .prepare import FrontOptions, prepare
from .schedule.boards import Board


def board_from_manifest(manifest: dict, where: Path) -> Board:
    """The board profile the design was compiled for, as recorded (a custom one too)."""
    recorded = manifest.get("board", {})
    try:
        return Board(**{field.name: recorded[field.name] for field in fields(Board)})
    except (KeyError, TypeError) as exc:
        raise FpgagenError(f"{where}/{NAME}: incomplete board record ({exc!r})") from None


def model_from_manifest(outdir: Path) -> Model:
    """The quantized, scheduled model OUTDIR was compiled from."""
    outdir = Path(outdir)
    manifest = read_manifest(outdir)
    try:
        source = manifest["source"]
        recorded = manifest["schedule"]
        stages = tuple(
            Stage(stage["mode"], tuple(stage["layers"]), int(stage["pes"]), stage["weight_memory"])
            for stage in recorded["stages"]
        )
        board = board_from_manifest(manifest, outdir)
        schedule = Schedule(
            stages=stages,
            in_lanes=int(recorded["in_lanes"]),
            board=board.name,
            clock_mhz=board.clock_mhz,
            policy=recorded["policy"],
            objective=recorded["objective"],
        )
        options = FrontOptions(
            precision=manifest["precision"], calib=Path(source["calib"]) if source.get("calib") else None
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise FpgagenError(f"{outdir}/{NAME}: incomplete manifest ({exc!r})") from None
    if not source.get("model"):
        raise FpgagenError(f"{outdir}: the design was not compiled from a model file; it cannot take new inputs")
    return prepare(Path(source["model"]), board, options, recorded=schedule).model
