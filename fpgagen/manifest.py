"""OUTDIR/manifest.json: the machine-readable summary of a compiled design (docs/manifest.md).

Written by `fpgagen compile` from the engine plan; read by `fpgagen csim/sim/synth/report`, the
cocotb testbench and the tests. It records how the design was made (model file, precision,
calibration inputs, board, schedule) so the same quantized, scheduled model can be rebuilt
(fpgagen.design), and what the plan made of it. This module only records and reads.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from . import __version__
from .accuracy import Accuracy
from .backends.hls.emit import testbench_file
from .engine import EnginePlan
from .errors import FpgagenError
from .ir import Model

SCHEMA = "fpgagen.manifest/8"
SCHEMA_FAMILY = "fpgagen.manifest/"  # every version: a folder holding any of them is an earlier design
NAME = "manifest.json"


@dataclass(frozen=True)
class NumericsRecord:
    """How the formats were chosen, and how far the design is from float."""

    max_error: float | None  # the bound asked for with --max-error
    goal: float | None  # the error the format search kept within (passes/formats.py)
    margin: float | None  # measured ranges were widened by this (2: the guard bit); None: assumed ranges
    accuracy: Accuracy | None  # error and saturation measured on calibration inputs or the test vectors

    def to_dict(self) -> dict:
        accuracy = self.accuracy.to_dict() if self.accuracy is not None else None
        if accuracy is not None:
            del accuracy["layers"]  # per layer, in layers[].saturated
        return {
            "max_error": self.max_error,
            "search_goal": self.goal,
            "ranges": "assumed" if self.margin is None else "calibration",
            "calibration_margin": self.margin,
            "measured": accuracy,
        }


def numerics_digest(model: Model) -> str:
    """A fingerprint of a quantized model's integer weights, biases and formats: what a design
    computes. A rebuilt model with another digest does not compute what the design does."""
    digest = hashlib.sha256(str(model.input_format).encode())
    for layer in model.layers:
        num = layer.numerics
        digest.update(f"{num.weight_format} {num.output_format} {num.lo_q} {num.hi_q} {num.acc_bits}".encode())
        for array in (num.weights_q.indptr, num.weights_q.indices, num.weights_q.data, num.bias_q):
            digest.update(np.ascontiguousarray(array, dtype=np.int64).tobytes())
    return digest.hexdigest()


def build_manifest(
    plan: EnginePlan, source: Path | None, calib: Path | None, numerics: NumericsRecord, files: dict[str, str]
) -> dict:
    """The manifest of `plan`'s design, whose other files are `files` (paths relative to the
    design's folder, with the SHA-256 of their content): a later compile into the folder replaces
    those as they are, and refuses to touch anything else (fpgagen/outdir.py)."""
    model, board, interface = plan.model, plan.board, plan.interface
    schedule = model.schedule
    estimate = schedule.estimate.to_dict() if schedule.estimate is not None else None
    estimated_layers = {entry["name"]: entry for entry in (estimate or {}).get("layers", [])}
    return {
        "schema": SCHEMA,
        "fpgagen": __version__,
        "source": {
            "model": str(Path(source).resolve()) if source else None,
            "calib": str(Path(calib).resolve()) if calib else None,
        },
        "model": {
            "name": model.name,
            "input": model.input_name,
            "output": model.output_name,
            "input_shape": list(model.input_shape),
            "in_features": model.in_features,
            "out_features": model.out_features,
            "layers": len(model.layers),
            "nnz": sum(layer.numerics.weights_q.nnz for layer in model.layers),
        },
        "precision": model.precision.name,
        "numerics": numerics.to_dict() | {"digest": numerics_digest(model)},
        "board": asdict(board),
        "schedule": {
            "policy": schedule.policy,
            "objective": schedule.objective,
            "in_lanes": schedule.in_lanes,
            "deep_channels": schedule.deep_channels,
            "limit": None if schedule.limit is None else asdict(schedule.limit),
            "stages": [
                {
                    "mode": s.mode,
                    "layers": list(s.layers),
                    "pes": s.pes,
                    "units": s.units,
                    "private": s.private,
                    "drain_lanes": s.drain_lanes,
                    "weight_memory": s.weight_memory,
                    "channels": s.channels,
                }
                for s in schedule.stages
            ],
        },
        "layers": [
            _layer_entry(plan, index, estimated_layers, numerics.accuracy) for index in range(len(model.layers))
        ],
        "engine": {
            "channels": [{"subs": c.subs, "length": c.length, "item_bits": c.item_bits} for c in plan.channels],
            "stages": [
                {"logic": asdict(stage.logic), "memories": [asdict(memory) for memory in stage.memories]}
                for stage in plan.stages
            ],
            "reader": {"memories": [asdict(memory) for memory in plan.reader_memories]},
        },
        "estimate": estimate,
        "hls": {"folder": "hls", "top": plan.top, "testbench": testbench_file(plan.top)},
        "rtl": {
            "folder": "rtl",
            "toplevel": plan.top,
            "core": plan.core,
            "in_lanes": interface.in_lanes,
            "out_lanes": interface.out_lanes,
            "in_features": model.in_features,
            "out_features": model.out_features,
            "last_layer": model.layers[-1].name,
            "control": interface.control.registers(),
            "ports": [
                {
                    "port": port.port,
                    "stage": port.stage,
                    "channel": port.channel,
                    "data_bits": port.data_bits,
                    "image": port.image,
                    "bytes_per_cycle": port.bytes_per_cycle,
                    "memory_latency": port.memory_latency,
                    "load_beats": port.load_beats,
                }
                for port in interface.ports
            ],
            "perf": [
                {"layer": layer.name, "instance": f"u_stage{s.index}", "slot": slot}
                for s in plan.stages
                for slot, layer in enumerate(s.layers)
            ],
        },
        "vectors": "vectors",
        "files": dict(sorted(files.items())),
    }


def _layer_entry(plan: EnginePlan, index: int, estimated: dict, accuracy: Accuracy | None) -> dict:
    layer_plan = plan.layer(index)
    layer = layer_plan.layer
    numerics = layer.numerics
    shape = layer_plan.shape
    encoding = plan.stages[layer.schedule.stage].encoding  # a sequential stage's, whatever the layer's
    return {
        "name": layer.name,
        "origin": layer.origin,
        "in_features": layer.in_features,
        "out_features": layer.out_features,
        "nnz": numerics.weights_q.nnz,
        "density": numerics.weights_q.nnz / (layer.in_features * layer.out_features),
        "activation": str(layer.activation),
        "formats": {
            "input": str(numerics.input_format),
            "weight": str(numerics.weight_format),
            "output": str(numerics.output_format),
            "acc_bits": shape.acc_bits,
            "shift": numerics.shift,
            "lo_q": numerics.lo_q,
            "hi_q": numerics.hi_q,
        },
        "mode": layer.schedule.mode,
        "pes": layer.schedule.pes,
        "units": layer.schedule.units,
        "private": layer.schedule.private,
        "drain_lanes": layer.schedule.drain_lanes,
        "stage": layer.schedule.stage,
        "weight_memory": layer.schedule.weight_memory,
        "beats": shape.beats,
        "encoding": asdict(encoding) | {"multiplies": encoding.multiplies},
        "lane_efficiency": numerics.weights_q.nnz / max(1, shape.beats * shape.pes),
        "estimate": estimated.get(layer.name),
        "saturated": accuracy.layers[index].saturated if accuracy is not None else None,
    }


def write_manifest(manifest: dict, outdir: Path) -> None:
    (Path(outdir) / NAME).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def read_manifest(outdir: Path) -> dict:
    path = Path(outdir) / NAME
    if not Path(outdir).is_dir():
        raise FpgagenError(
            f"{outdir}: {'is a file, not a design folder' if Path(outdir).exists() else 'no such folder'}"
        )
    if not path.is_file():
        raise FpgagenError(f"{outdir}: no {NAME}; compile a model into it first (fpgagen compile MODEL -o {outdir})")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FpgagenError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        raise FpgagenError(f"{path}: not an fpgagen manifest of schema {SCHEMA}")
    return manifest
