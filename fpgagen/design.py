"""A compiled design folder read back: its manifest, its board, and the model it was made from.

The manifest records the model file, the board, every layer's formats and the schedule; the same
front half (fpgagen.prepare) applying the recorded formats and schedule gives the same quantized,
scheduled model (checked by the manifest's digest of the integer weights), so golden outputs
computed from it are exactly what the design's hardware computes, on any inputs. The calibration
file is not needed again.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from pathlib import Path

from .errors import FpgagenError
from .ir import Model, Schedule, Stage
from .manifest import NAME, numerics_digest, read_manifest
from .numerics import FixedFormat, parse_precision
from .passes.quantize import Formats, LayerFormats
from .prepare import Recorded, prepare
from .schedule.boards import Board


def board_from_manifest(manifest: dict, where: Path) -> Board:
    """The board profile the design was compiled for, as recorded (a custom one too)."""
    recorded = manifest.get("board", {})
    try:
        # a field with a default (the shell's share) may be missing from an earlier manifest
        return Board(**{f.name: recorded[f.name] for f in fields(Board) if f.name in recorded or f.default is MISSING})
    except (KeyError, TypeError) as exc:
        raise FpgagenError(f"{where}/{NAME}: incomplete board record ({exc!r})") from None


def recorded_decisions(manifest: dict, where: Path) -> Recorded:
    """The formats and schedule a manifest records."""
    try:
        recorded = manifest["schedule"]
        board = board_from_manifest(manifest, where)
        schedule = Schedule(
            stages=tuple(
                Stage(
                    stage["mode"],
                    tuple(stage["layers"]),
                    int(stage["pes"]),
                    stage["weight_memory"],
                    int(stage["units"]),
                    int(stage["channels"]),
                    bool(stage.get("private", False)),  # absent from manifests written before private PEs
                    stage.get("drain_lanes"),  # absent before drain lanes: all P
                )
                for stage in recorded["stages"]
            ),
            in_lanes=int(recorded["in_lanes"]),
            deep_channels=recorded["deep_channels"],
            board=board.name,
            clock_mhz=board.clock_mhz,
            policy=recorded["policy"],
            objective=recorded["objective"],
        )
        layers = manifest["layers"]
        formats = Formats(
            FixedFormat.parse(layers[0]["formats"]["input"]),
            tuple(
                LayerFormats(
                    FixedFormat.parse(layer["formats"]["weight"]), FixedFormat.parse(layer["formats"]["output"])
                )
                for layer in layers
            ),
        )
        return Recorded(formats, parse_precision(manifest["precision"]), schedule)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise FpgagenError(f"{where}/{NAME}: incomplete manifest ({exc!r})") from None


def model_from_manifest(outdir: Path) -> Model:
    """The quantized, scheduled model OUTDIR was compiled from."""
    outdir = Path(outdir)
    manifest = read_manifest(outdir)
    source = manifest.get("source", {}).get("model")
    if not source:
        raise FpgagenError(f"{outdir}: the design was not compiled from a model file; it cannot take new inputs")
    recorded = recorded_decisions(manifest, outdir)
    model = prepare(Path(source), board_from_manifest(manifest, outdir), recorded=recorded).model
    if numerics_digest(model) != manifest.get("numerics", {}).get("digest"):
        raise FpgagenError(
            f"{source}: has changed since {outdir} was compiled from it (its fixed-point weights differ); "
            "compile it again"
        )
    return model
