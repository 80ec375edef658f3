"""Rebuild the quantized, scheduled model a compiled output folder was made from.

`fpgagen csim OUTDIR --inputs X.npy` (and `fpgagen sim`) need the model to compute golden outputs
for new inputs. OUTDIR/manifest.json records how to get it back:

    "model":     path of the model file (absolute, or relative to OUTDIR)
    "precision": the precision it was compiled with, such as "w8a16"
    "calib":     path of the calibration inputs (.npy), or null
    "schedule":  {"stages": [{"mode", "layers", "pes", "weight_memory"}, ...], "in_lanes", "board",
                  "clock_mhz", "policy", "objective"}

The same model, precision and calibration give the same fixed-point formats, so the rebuilt model
computes exactly what the compiled design computes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import FpgagenError
from ..frontend import load_model
from ..golden import flatten_inputs
from ..ir import Model, Schedule, Stage
from ..numerics import parse_precision
from ..passes.quantize import quantize
from ..schedule.apply import apply_schedule


def model_from_manifest(outdir: Path) -> Model:
    """The model of OUTDIR, quantized and scheduled as its manifest says."""
    path = Path(outdir) / "manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        model_path = _path(outdir, manifest["model"])
        precision = parse_precision(manifest["precision"])
        calib_path = manifest.get("calib")
        recorded = manifest["schedule"]
        schedule = Schedule(
            stages=tuple(
                Stage(stage["mode"], tuple(stage["layers"]), int(stage["pes"]), stage["weight_memory"])
                for stage in recorded["stages"]
            ),
            in_lanes=int(recorded["in_lanes"]),
            board=recorded["board"],
            clock_mhz=float(recorded["clock_mhz"]),
            policy=recorded["policy"],
            objective=recorded["objective"],
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FpgagenError(f"{path}: cannot tell which model was compiled ({exc!r})") from None
    if precision is None:
        raise FpgagenError(f"{path}: precision float has no hardware")
    model = load_model(model_path)
    calib = None
    if calib_path is not None:
        calib_file = _path(outdir, calib_path)
        try:
            calib = flatten_inputs(model, np.load(calib_file, allow_pickle=False), str(calib_file))
        except (OSError, ValueError) as exc:
            raise FpgagenError(f"{calib_file}: not a readable .npy array ({exc})") from None
    return apply_schedule(quantize(model, precision, calib), schedule)


def _path(outdir: Path, recorded: str) -> Path:
    path = Path(recorded)
    return path if path.is_absolute() else Path(outdir) / path
