"""Checks that a compiled design is its engine plan: the cost model prices the plan's memories, and
the RTL and HLS back ends emit the plan's parameters and constants (issue "one engine description").

`check_design_follows_plan(outdir)` runs on every design the tests build (tests/designs.py and the
command-line compiles of test_rtl and test_hls call it).
"""

from __future__ import annotations

import json
import re
import subprocess
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

# The plan's kinds as synthesis attributes, and the stage parameter that carries each memory's.
STYLES = {"bram": "block", "lutram": "distributed", "registers": "registers"}
STAGE_STYLES = {
    False: {"row table": "ROWS_STYLE", "weights": "WEIGHTS_STYLE", "bias": "BIAS_STYLE", "accumulators": "ACC_STYLE"},
    True: {
        "descriptors": "DESC_STYLE", "row table": "ROWS_STYLE", "bias": "BIAS_STYLE", "accumulators": "ACC_STYLE",
        "row requests": "REQUEST_STYLE", "waiting activations": "ACTIVATION_STYLE",
        "loop-back lanes": "LOOP_STYLE", "loop-back mask": "LOOP_MASK_STYLE",
    },
}  # fmt: skip
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
    assert _listing(cost.reader_memories(plan.in_lanes)) == _listing(plan.reader_memories)
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
            "N_IN": layer.shape.n_in, "N_OUT": layer.shape.n_out, "ADDRESSES": layer.shape.addresses,
            "LOCAL_W": layer.shape.slot.local_bits, "BEATS": layer.shape.rom_beats,
            "SHIFT": layer.shift, "LO": layer.lo, "HI": layer.hi,
        }  # fmt: skip
    loop = stage.loop
    return common | {
        "LAYERS": len(stage.layers), "LOOP_IDX_W": loop.index_bits if loop else 1, "ADDRESSES": stage.addresses,
        "LOCAL_W": (stage.addresses - 1).bit_length() or 1,
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
        for role, parameter in STAGE_STYLES[stage.sequential].items():
            if any(memory.role == role for memory in stage.memories):
                kind = stage.memory(role).kind
                assert found[parameter] == f'"{STYLES[kind]}"', f"stage {stage.index} {role}: {found[parameter]}"
    # Channel k: lane FIFOs of item_bits x lane_depth, a mask FIFO of MASK_DEPTH masks.
    for k, channel in enumerate(plan.channels):
        lane_memory, mask_memory = channel.memories("channel")
        lanes = re.search(rf"g_ch{k}\b.*?fg_fifo #\(\.WIDTH\((\d+)\), \.DEPTH\((\d+)\), \.STYLE\((\S+)\)\)", core,
                          re.DOTALL)  # fmt: skip
        assert (int(lanes[1]), int(lanes[2]), lanes[3]) == (
            channel.item_bits, channel.lane_depth, f'"{STYLES[lane_memory.kind]}"'
        ), f"channel {k}"  # fmt: skip
        mask = instances[f"u_ch{k}_mask"]
        assert (int(mask["WIDTH"]), int(mask["DEPTH"]), mask["STYLE"]) == (
            channel.lanes, MASK_DEPTH, f'"{STYLES[mask_memory.kind]}"'
        )  # fmt: skip
    output = instances["u_out"]
    output_memory = plan.stages[-1].memory("output beats")
    assert (int(output["WIDTH"]), int(output["DEPTH"]), output["STYLE"]) == (
        plan.interface.out_bits + 1, OUTPUT_DEPTH, f'"{STYLES[output_memory.kind]}"'
    )  # fmt: skip
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
            cfg = configs[stage.name]
            port = plan.interface.ports[stage.port]
            expected = {
                "IN_LANES": stage.input.lanes, "PES": stage.pes, "LAYERS": len(stage.layers),
                "ROWS": stage.rows, "BIAS_ROWS": stage.bias_rows, "ADDRESSES": stage.addresses,
                "ACC_BITS": stage.acc_bits, "IMAGE_BEATS": port.image_beats,
                "SLOT_LOCAL_BITS": OFFCHIP_SLOT.local_bits, "SLOT_WEIGHT_BITS": OFFCHIP_SLOT.weight_bits,
            }  # fmt: skip
            loop_depth = stage.loop.lane_depth if stage.loop else 1
            assert f"#pragma HLS STREAM variable=loop depth={loop_depth}\n" in source
        else:
            (layer,) = stage.layers
            cfg = configs[stage.name]
            expected = {
                "IN_LANES": stage.input.lanes, "PES": stage.pes, "N_IN": layer.shape.n_in,
                "N_OUT": layer.shape.n_out, "ADDRESSES": layer.shape.addresses, "BEATS": layer.shape.rom_beats,
                "ACC_BITS": stage.acc_bits, "WEIGHT_BITS": layer.shape.slot.weight_bits,
                "LOCAL_BITS": layer.shape.slot.local_bits, "SHIFT": layer.shift, "LO": layer.lo, "HI": layer.hi,
                "TASK_DEPTH": ROW_TASK_DEPTH,
            }  # fmt: skip
            bound = re.search(rf"void {stage.name}::run\(.*?BIND_STORAGE variable=rom type=rom_1p impl=(\w+)", source,
                              re.DOTALL)  # fmt: skip
            assert bound[1] == {"bram": "bram", "lutram": "lutram"}[stage.memory("weights").kind], (
                f"stage {stage.index}"
            )
        assert cfg == expected, f"stage {stage.index}"
    for k, channel in enumerate(plan.channels):
        assert f"typedef fpgagen::item<{channel.index_bits}> ch{k}_item_t;" in header
        assert f"#pragma HLS STREAM variable=ch{k} depth={channel.lane_depth}\n" in source
        assert f"#pragma HLS STREAM variable=ch{k}_mask depth={MASK_DEPTH}\n" in source


# RTL as elaborated ------------------------------------------------------------------------------------

# Where each of the plan's memories is in the core: (instance path pattern, owner, role). An owner is
# "stage<s>", "channel<k>" or "output".
_RTL_MEMORIES = [
    (r"g_ch(\d+)\[\d+\]\.u_fifo\.mem", "channel", "lanes"),
    (r"u_ch(\d+)_mask\.mem", "channel", "mask"),
    (r"u_out\.mem", "output", "output beats"),
    (r"u_stage(\d+)\.u_entries\.mem", "stage", "weights"),
    (r"u_stage(\d+)\.u_rows\.mem", "stage", "row table"),
    (r"u_stage(\d+)\.u_pes\.u_bias\.mem", "stage", "bias"),
    (r"u_stage(\d+)\.u_pes\.g_lane\[\d+\]\.u_bank[01]\.mem", "stage", "accumulators"),
    (r"u_stage(\d+)\.u_desc\.mem", "stage", "descriptors"),
    (r"u_stage(\d+)\.u_requests\.mem", "stage", "row requests"),
    (r"u_stage(\d+)\.u_activations\.mem", "stage", "waiting activations"),
    (r"u_stage(\d+)\.g_loop_back\.g_loop\[\d+\]\.u_fifo\.mem", "stage", "loop-back lanes"),
    (r"u_stage(\d+)\.g_loop_back\.u_loop_mask\.mem", "stage", "loop-back mask"),
]


def elaborated_memories(rtl: Path, top: str) -> list[tuple[str, int, int, str]]:
    """Every memory of module `top` as Yosys elaborates it: (instance path, depth, width, style)."""
    from fpgagen.synth import yosys_command

    sources = " ".join(sorted(path.name for path in rtl.glob("*.v")))
    # Everything but the memories is deleted before writing, to keep the netlist small.
    script = (
        f"read_verilog -sv {sources}; hierarchy -top {top}; proc; memory_collect; "
        "delete */t:$* */t:$mem_v2 %d */t:$paramod* %d; write_json elaborated.json"
    )
    done = subprocess.run([*yosys_command(), "-q", "-p", script], cwd=rtl, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    netlist = json.loads((rtl / "elaborated.json").read_text())
    (rtl / "elaborated.json").unlink()
    modules = netlist["modules"]
    found = []

    def walk(module: str, path: str) -> None:
        for name, cell in modules[module]["cells"].items():
            name = name.lstrip("\\")
            if cell["type"] == "$mem_v2":
                attributes = cell["attributes"]
                style = attributes.get("ram_style") or attributes.get("rom_style")
                found.append(
                    (f"{path}{name}", int(cell["parameters"]["SIZE"], 2), int(cell["parameters"]["WIDTH"], 2), style)
                )
            elif cell["type"] in modules:
                walk(cell["type"], f"{path}{name}.")

    walk(top, "")
    return found


def check_rtl_memories_are_the_plan(outdir: Path, plan: EnginePlan) -> None:
    """The memories the Verilog really has, as Yosys elaborates the core, are the plan's: depth,
    width, kind (its synthesis attribute) and count, each where the plan puts it."""
    built: dict[tuple[str, str], list[tuple[int, int, str]]] = {}
    for path, depth, width, style in elaborated_memories(Path(outdir) / "rtl", plan.core):
        for pattern, owner, role in _RTL_MEMORIES:
            match = re.fullmatch(pattern, path)
            if match:
                key = (f"{owner}{match[1] if match.groups() else ''}", role)
                built.setdefault(key, []).append((depth, width, style))
                break
        else:
            raise AssertionError(f"the RTL has a memory the plan does not: {path}")
    planned: dict[tuple[str, str], list[tuple[int, int, str]]] = {}

    def add(owner: str, role: str, memory) -> None:
        planned.setdefault((owner, role), []).extend([(memory.depth, memory.width, STYLES[memory.kind])] * memory.count)

    for k, channel in enumerate(plan.channels):
        lanes, mask = channel.memories("channel")
        add(f"channel{k}", "lanes", lanes)
        add(f"channel{k}", "mask", mask)
    for stage in plan.stages:
        for memory in stage.memories:
            if memory.role == "output beats":
                add("output", memory.role, memory)
            elif not memory.role.startswith("output"):  # the output channel: channel s + 1 above
                add(f"stage{stage.index}", memory.role, memory)
    assert {key: sorted(value) for key, value in built.items()} == {
        key: sorted(value) for key, value in planned.items()
    }
