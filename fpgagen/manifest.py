"""OUTDIR/manifest.json: the machine-readable summary of a compiled design (docs/manifest.md).

Written by `fpgagen compile` from the engine plan; read by `fpgagen csim/sim/synth/report`, the
cocotb testbench and the tests. It records how the design was made (model file, precision,
calibration inputs, board, schedule) so the same quantized, scheduled model can be rebuilt
(fpgagen.design), and what the plan made of it. This module only records and reads.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from . import __version__
from .engine import EnginePlan
from .errors import FpgagenError

SCHEMA = "fpgagen.manifest/1"
NAME = "manifest.json"


def build_manifest(plan: EnginePlan, source: Path | None, calib: Path | None) -> dict:
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
        "board": asdict(board),
        "schedule": {
            "policy": schedule.policy,
            "objective": schedule.objective,
            "in_lanes": schedule.in_lanes,
            "stages": [
                {"mode": s.mode, "layers": list(s.layers), "pes": s.pes, "weight_memory": s.weight_memory}
                for s in schedule.stages
            ],
        },
        "layers": [_layer_entry(plan, index, estimated_layers) for index in range(len(model.layers))],
        "engine": {
            "channels": [
                {"lanes": c.lanes, "length": c.length, "item_bits": c.item_bits, "lane_depth": c.lane_depth}
                for c in plan.channels
            ],
            "stages": [{"memories": [asdict(memory) for memory in stage.memories]} for stage in plan.stages],
            "reader": {"memories": [asdict(memory) for memory in plan.reader_memories]},
        },
        "estimate": estimate,
        "hls": {"folder": "hls", "top": plan.top},
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
                    "data_bits": port.data_bits,
                    "image": port.image,
                    "bytes_per_cycle": port.bytes_per_cycle,
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
    }


def _layer_entry(plan: EnginePlan, index: int, estimated: dict) -> dict:
    layer_plan = plan.layer(index)
    layer = layer_plan.layer
    numerics = layer.numerics
    shape = layer_plan.shape
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
        "stage": layer.schedule.stage,
        "weight_memory": layer.schedule.weight_memory,
        "beats": shape.beats,
        "lane_efficiency": numerics.weights_q.nnz / max(1, shape.beats * shape.pes),
        "estimate": estimated.get(layer.name),
    }


def write_manifest(manifest: dict, outdir: Path) -> None:
    (Path(outdir) / NAME).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def read_manifest(outdir: Path) -> dict:
    path = Path(outdir) / NAME
    if not path.is_file():
        raise FpgagenError(f"{outdir}: no {NAME}; compile a model into it first (fpgagen compile MODEL -o {outdir})")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FpgagenError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        raise FpgagenError(f"{path}: not an fpgagen manifest of schema {SCHEMA}")
    return manifest
