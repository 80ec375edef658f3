"""Checks that a compiled design is its engine plan: the cost model prices the plan's memories, and
the RTL and HLS back ends emit the plan's parameters and constants (issue "one engine description").

`check_design_follows_plan(outdir)` runs on every design the tests build (tests/designs.py and the
command-line compiles of test_rtl and test_hls call it).
"""

from __future__ import annotations

import re
from pathlib import Path

from fpgagen.design import board_from_manifest, model_from_manifest
from fpgagen.engine import EnginePlan, StagePlan, plan_engine
from fpgagen.engine.geometry import (
    ACTIVATION_DEPTH,
    MASK_DEPTH,
    MAX_BURSTS,
    OFFCHIP_SLOT,
    OUTPUT_DEPTH,
    REQUEST_DEPTH,
    ROW_TASK_DEPTH,
    Channel,
)
from fpgagen.ir import Model
from fpgagen.manifest import read_manifest
from fpgagen.schedule.cost_model import Activity, CostModel


def check_design_follows_plan(outdir: Path, model: Model | None = None) -> EnginePlan:
    """`model`: the quantized, scheduled model compiled into `outdir`, when it was not compiled
    from a model file (otherwise it is rebuilt from the manifest)."""
    manifest = read_manifest(outdir)
    if model is None:
        model = model_from_manifest(outdir)
    plan = plan_engine(model, board_from_manifest(manifest, outdir))
    check_cost_model_prices_the_plan(plan)
    check_manifest_records_the_plan(manifest, plan)
    check_rtl_follows_the_plan(Path(outdir) / "rtl", plan)
    check_hls_follows_the_plan(Path(outdir) / "hls", plan)
    return plan


def _listing(memories) -> list[tuple]:
    return [(m.role, m.depth, m.width, m.kind, m.count) for m in memories]


def check_cost_model_prices_the_plan(plan: EnginePlan) -> None:
    cost = CostModel(plan.model, plan.board, Activity.uniform(plan.model))
    assert _listing(cost.reader_memories()) == _listing(plan.reader_memories)
    for stage in plan.stages:
        first, last = stage.layers[0].index, stage.layers[-1].index
        if stage.sequential:
            priced = cost.sequential_memories(first, last, stage.pes)
        else:
            priced = cost.dataflow_memories(first, stage.pes)
        assert _listing(priced) == _listing(stage.memories), f"stage {stage.index}"


def check_manifest_records_the_plan(manifest: dict, plan: EnginePlan) -> None:
    recorded = manifest["engine"]
    for entry, stage in zip(recorded["stages"], plan.stages, strict=True):
        assert [tuple(m.values()) for m in entry["memories"]] == _listing(stage.memories)
    for entry, channel in zip(recorded["channels"], plan.channels, strict=True):
        assert (entry["lanes"], entry["length"], entry["item_bits"], entry["lane_depth"]) == (
            channel.lanes, channel.length, channel.item_bits, channel.lane_depth
        )  # fmt: skip
    for index, entry in enumerate(manifest["layers"]):
        shape = plan.layer(index).shape
        assert (entry["beats"], entry["formats"]["acc_bits"]) == (shape.beats, shape.acc_bits)


# RTL -----------------------------------------------------------------------------------------------

_INSTANCE = re.compile(r"(fg_\w+|\w+_core)\s*#\((?P<params>.*?)\)\s*(?P<name>u_\w+)\s*\(", re.DOTALL)
_PARAMETER = re.compile(r"\.(\w+)\(([^()]*)\)")


def rtl_instances(text: str) -> dict[str, dict[str, str]]:
    """Every parameterized instance of a Verilog file: its name -> {parameter: value text}."""
    return {match["name"]: dict(_PARAMETER.findall(match["params"])) for match in _INSTANCE.finditer(text)}


def _out_index_bits(stage: StagePlan) -> int:
    return stage.output.index_bits if isinstance(stage.output, Channel) else 1


def expected_stage_parameters(stage: StagePlan) -> dict[str, int]:
    common = {
        "B": stage.input.lanes, "P": stage.pes, "IN_IDX_W": stage.input.index_bits,
        "OUT_IDX_W": _out_index_bits(stage), "START_W": stage.start_bits, "CNT_W": stage.count_bits,
        "W_BITS": stage.weight_bits, "ACC_W": stage.acc_bits, "DENSE": int(stage.last),
    }  # fmt: skip
    if not stage.sequential:
        (layer,) = stage.layers
        return common | {
            "N_IN": layer.shape.n_in, "N_OUT": layer.shape.n_out, "BEATS": layer.shape.rom_beats,
            "SHIFT": layer.shift, "LO": layer.lo, "HI": layer.hi,
        }  # fmt: skip
    loop = stage.loop
    return common | {
        "LAYERS": len(stage.layers), "LOOP_IDX_W": loop.index_bits if loop else 1, "DEPTH": stage.addresses,
        "ROWS": stage.rows, "BIAS_ROWS": stage.bias_rows, "LOOP_DEPTH": loop.lane_depth if loop else 1,
        "MASK_DEPTH": MASK_DEPTH, "REQUEST_DEPTH": REQUEST_DEPTH, "ACTIVATION_DEPTH": ACTIVATION_DEPTH,
        "MAX_BURSTS": MAX_BURSTS,
    }  # fmt: skip


def check_rtl_follows_the_plan(rtl: Path, plan: EnginePlan) -> None:
    core = (rtl / f"{plan.core}.v").read_text()
    instances = rtl_instances(core)
    for stage in plan.stages:
        found = instances[f"u_stage{stage.index}"]
        for name, value in expected_stage_parameters(stage).items():
            assert int(found[name]) == value, f"stage {stage.index} {name}: {found[name]} != {value}"
    # Channel k: lane FIFOs of item_bits x lane_depth, a mask FIFO of MASK_DEPTH masks.
    for k, channel in enumerate(plan.channels):
        lanes = re.search(rf"g_ch{k}\b.*?fg_fifo #\(\.WIDTH\((\d+)\), \.DEPTH\((\d+)\)\)", core, re.DOTALL)
        assert (int(lanes[1]), int(lanes[2])) == (channel.item_bits, channel.lane_depth), f"channel {k}"
        mask = instances[f"u_ch{k}_mask"]
        assert (int(mask["WIDTH"]), int(mask["DEPTH"])) == (channel.lanes, MASK_DEPTH)
    output = instances["u_out"]
    assert (int(output["WIDTH"]), int(output["DEPTH"])) == (plan.interface.out_bits + 1, OUTPUT_DEPTH)
    reader = instances["u_reader"]
    assert (int(reader["K"]), int(reader["IDX_W"])) == (plan.in_lanes, plan.channels[0].index_bits)


# HLS -----------------------------------------------------------------------------------------------

_CONSTANT = re.compile(r"static const int (\w+) = (-?\d+);")


def hls_configs(header: str) -> dict[str, dict[str, int]]:
    """Every `namespace X { struct cfg { static const int ... } }` of the top header."""
    configs = {}
    for match in re.finditer(r"namespace (\w+) \{\nstruct cfg \{(.*?)\n\};", header, re.DOTALL):
        configs[match[1]] = {name: int(value) for name, value in _CONSTANT.findall(match[2])}
    return configs


def check_hls_follows_the_plan(hls: Path, plan: EnginePlan) -> None:
    header = (hls / f"{plan.top}.h").read_text()
    source = (hls / f"{plan.top}.cpp").read_text()
    configs = hls_configs(header)
    for stage in plan.stages:
        if stage.sequential:
            cfg = configs[f"seq{stage.port}"]
            port = plan.interface.ports[stage.port]
            expected = {
                "IN_LANES": stage.input.lanes, "LANES": stage.pes, "LAYERS": len(stage.layers),
                "ROWS": stage.rows, "BIAS_DEPTH": stage.bias_rows, "MAX_DEPTH": stage.addresses,
                "ACC_BITS": stage.acc_bits, "IMAGE_BEATS": port.image_beats,
                "SLOT_LOCAL_BITS": OFFCHIP_SLOT.local_bits, "SLOT_WEIGHT_BITS": OFFCHIP_SLOT.weight_bits,
            }  # fmt: skip
            loop_depth = stage.loop.lane_depth if stage.loop else 1
            assert f"#pragma HLS STREAM variable=loop depth={loop_depth}\n" in source
        else:
            (layer,) = stage.layers
            cfg = configs[f"layer_{layer.name}"]
            expected = {
                "IN_LANES": stage.input.lanes, "LANES": stage.pes, "N_IN": layer.shape.n_in,
                "N_OUT": layer.shape.n_out, "DEPTH": layer.shape.addresses, "BEATS": layer.shape.rom_beats,
                "ACC_BITS": stage.acc_bits, "WEIGHT_BITS": layer.shape.slot.weight_bits,
                "LOCAL_BITS": layer.shape.slot.local_bits, "SHIFT": layer.shift, "LO": layer.lo, "HI": layer.hi,
                "TASK_DEPTH": ROW_TASK_DEPTH,
            }  # fmt: skip
            (weights,) = [m for m in stage.memories if m.role == "weights"]
            bound = re.search(rf"void layer_{layer.name}::run\(.*?BIND_STORAGE variable=rom type=rom_1p impl=(\w+)", source,
                              re.DOTALL)  # fmt: skip
            assert bound[1] == {"bram": "bram", "lutram": "lutram"}[weights.kind], f"stage {stage.index}"
        assert cfg == expected, f"stage {stage.index}"
    for k, channel in enumerate(plan.channels):
        assert f"typedef fpgagen::item<{channel.index_bits}> c{k}_item_t;" in header
        assert f"#pragma HLS STREAM variable=c{k} depth={channel.lane_depth}\n" in source
        assert f"#pragma HLS STREAM variable=c{k}_mask depth={MASK_DEPTH}\n" in source
