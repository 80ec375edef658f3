"""Checks that a compiled design is its engine plan: the cost model prices the plan's memories, and
the RTL and HLS back ends emit the plan's parameters and constants (issue "one engine description").

`check_design_follows_plan(outdir)` runs on every design the tests build (tests/designs.py and the
command-line compiles of test_rtl and test_hls call it).
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import asdict
from pathlib import Path

import numpy as np

from fpgagen.design import board_from_manifest, model_from_manifest
from fpgagen.engine import EnginePlan, StagePlan, plan_engine
from fpgagen.engine.geometry import (
    ACTIVATION_DEPTH,
    CHANNEL_DEPTH,
    CHANNEL_SLACK,
    DRAIN_SLACK,
    ITEM_FIFO_DEPTH,
    MAX_BURSTS,
    OUTPUT_DEPTH,
    READER_WORD_DEPTH,
    REQUEST_DEPTH,
    ROW_FIFO_DEPTH,
    Channel,
)
from fpgagen.ir import Model
from fpgagen.manifest import read_manifest
from fpgagen.schedule.activity import Activity
from fpgagen.schedule.cost_model import CostModel

# The plan's kinds as synthesis attributes, and the stage parameter that carries each memory's.
STYLES = {
    "bram": "block",
    "lutram": "distributed",
    "uram": "ultra",
    "registers": "registers",
    "constant": "distributed",
}
STAGE_STYLES = {
    False: {
        "row table": "ROWS_STYLE", "weights": "WEIGHTS_STYLE", "bias": "BIAS_STYLE", "accumulators": "ACC_STYLE",
        "PE entries": "PE_FIFO_STYLE", "unit activations": "ITEM_FIFO_STYLE", "unit rows": "ROW_FIFO_STYLE",
        "drained words": "WORD_FIFO_STYLE",
    },
    True: {
        "descriptors": "DESC_STYLE", "row table": "ROWS_STYLE", "bias": "BIAS_STYLE", "accumulators": "ACC_STYLE",
        "PE entries": "PE_FIFO_STYLE", "unit activations": "ITEM_FIFO_STYLE", "row requests": "REQUEST_STYLE",
        "waiting activations": "ACTIVATION_STYLE", "loop-back items": "LOOP_STYLE",
        "drained words": "WORD_FIFO_STYLE",
    },
}  # fmt: skip


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
    check_images_stripe_the_beats(Path(outdir), plan)
    return plan


def check_images_stripe_the_beats(outdir: Path, plan: EnginePlan) -> None:
    """Each channel c of C of a sequential stage holds, in its own image file, the slots of PEs
    c * P / C .. (c + 1) * P / C - 1 of every row's beats, at the layer's base plus the row's start
    in beats of its port, and that share of every beat of the load phase's tables from its start."""
    for stage in plan.sequential:
        shape = stage.sequential_shape
        images = [(outdir / plan.interface.ports[port].image).read_bytes() for port in stage.ports]
        share, width = stage.pes // stage.channels, shape.slot.width
        assert len({len(image) for image in images}) == 1, f"stage {stage.index}: images of unequal length"
        tables = np.frombuffer(stage.table_words.tobytes(), dtype=np.uint8).reshape(
            -1, shape.channels, shape.port_bytes
        )
        for channel, image in enumerate(images):
            assert image[: tables.shape[0] * shape.port_bytes] == tables[:, channel].tobytes()
        for layer in stage.layers:
            slots = layer.layout.slot_words(shape.slot)  # (beats, P)
            for channel, image in enumerate(images):
                held = np.frombuffer(
                    image, dtype=f"<u{width // 8}", count=len(slots) * share, offset=layer.offchip_base
                )
                expected = slots[:, channel * share : (channel + 1) * share].reshape(-1)
                assert np.array_equal(held, expected), f"stage {stage.index} channel {channel}: {layer.name}'s beats"
        assert all(len(image) == stage.image_beats * shape.port_bytes for image in images)


def _listing(memories) -> list[tuple]:
    return [(m.role, m.depth, m.width, m.kind, m.count, m.ports) for m in memories]


def check_cost_model_prices_the_plan(plan: EnginePlan) -> None:
    """The cost model sees the same memories and logic as the plan, for the placement the design
    really has."""
    cost = CostModel(plan.model, plan.board, Activity.uniform(plan.model), relabel=False)  # as the model stands
    deep = plan.model.schedule.deep_channels
    assert _listing(cost.reader_memories(plan.in_lanes, deep)) == _listing(plan.reader_memories)
    for stage in plan.stages:
        first, last = stage.layers[0].index, stage.layers[-1].index
        if stage.sequential:
            priced = cost.sequential_memories(first, last, stage.pes, stage.channels, deep)
        else:
            priced = cost.dataflow_memories(
                first,
                stage.pes,
                stage.units,
                stage.loaded,
                deep,
                stage.private,
                plan.model.schedule.stages[stage.index].drain_lanes,
            )
        assert _listing(priced) == _listing(stage.memories), f"stage {stage.index}"
        schedule_stage = plan.model.schedule.stages[stage.index]
        assert cost.logic(schedule_stage) == stage.logic, f"stage {stage.index}"


def check_manifest_records_the_plan(manifest: dict, plan: EnginePlan) -> None:
    recorded = manifest["engine"]
    recorded_stages = manifest["schedule"]["stages"]
    assert [
        (s["pes"], s["units"], s["channels"], s["private"], s["drain_lanes"] or s["pes"]) for s in recorded_stages
    ] == [(s.pes, s.units, s.channels, s.private, s.drain_lanes) for s in plan.stages]
    for entry, stage in zip(recorded["stages"], plan.stages, strict=True):
        assert entry["memories"] == [asdict(memory) for memory in stage.memories]
        assert entry["logic"] == asdict(stage.logic)
    for entry, channel in zip(recorded["channels"], plan.channels, strict=True):
        assert (entry["subs"], entry["length"], entry["item_bits"]) == (channel.subs, channel.length, channel.item_bits)
    for index, entry in enumerate(manifest["layers"]):
        shape = plan.layer(index).shape
        assert (entry["beats"], entry["formats"]["acc_bits"]) == (shape.beats, shape.acc_bits)


# RTL -----------------------------------------------------------------------------------------------

_INSTANCE = re.compile(r"(fg_\w+|\w+_core)\s*#\((?P<params>.*?)\)\s*(?P<name>u_\w+)\s*\(", re.DOTALL)
_PARAMETER = re.compile(r"\.(\w+)\(([^()]*)\)")


def rtl_instances(text: str) -> dict[str, dict[str, str]]:
    """Every parameterized instance of a Verilog file: its name -> {parameter: value text}."""
    return {match["name"]: dict(_PARAMETER.findall(match["params"])) for match in _INSTANCE.finditer(text)}


def expected_stage_parameters(stage: StagePlan, load_bits: int = 1) -> dict[str, int]:
    """A stage's numeric parameters, read off the plan (`load_bits`: the load chain's width)."""
    output_bits = stage.output.index_bits if isinstance(stage.output, Channel) else 1
    common = {
        "S": stage.input.subs, "P": stage.pes, "IN_IDX_W": stage.input.index_bits, "OUT_IDX_W": output_bits,
        "ADDRESSES": stage.addresses, "LOCAL_W": stage.local_bits, "START_W": stage.start_bits,
        "CNT_W": stage.count_bits, "W_BITS": stage.encoding.weight_bits, "ACC_W": stage.acc_bits, "DENSE": int(stage.last),
        "COUNT_W": stage.groups.count_bits, "ITEM_FIFO_DEPTH": ITEM_FIFO_DEPTH,
        "PE_FIFO_DEPTH": next((m.depth for m in stage.memories if m.role == "PE entries"), 0),  # 0: private PEs
        "WORD_FIFO_DEPTH": next((m.depth for m in stage.memories if m.role == "drained words"), OUTPUT_DEPTH),
        "DRAIN_SLACK": DRAIN_SLACK, "SUM_W": stage.sum_bits,
        "SCALE": stage.encoding.scale,
        "SCALE_SHIFT": -1 if stage.encoding.scale_shift is None else stage.encoding.scale_shift,
        "SINGLE_CYCLE": int(stage.logic.single_cycle), "ROTATED": int(stage.rotations is not None),
    }  # fmt: skip
    if not stage.sequential:
        (layer,) = stage.layers
        return common | {
            "K": stage.units, "G": stage.groups.size, "N_IN": layer.shape.n_in, "N_OUT": layer.shape.n_out,
            "BEATS": layer.shape.rom_beats, "SHIFT": layer.shift, "LO": layer.lo, "HI": layer.hi,
            "ROW_FIFO_DEPTH": ROW_FIFO_DEPTH, "LOADED": int(stage.loaded), "LOAD_W": load_bits,
            "STACKED": int(stage.stacked), "PRIVATE": int(stage.private), "D": stage.drain_lanes,
            "STEP_W": stage.drain_steps.bit_length() - 1, "ROWS_W": stage.groups.base_bits,
            "BIAS_ROWS": stage.bias_rows, "QUIET": int(stage.passes_empty),
        }  # fmt: skip
    loop = stage.loop
    return common | {
        "LAYERS": len(stage.layers), "LOOP_IDX_W": loop.index_bits if loop else 1, "ROWS": stage.rows,
        "BIAS_ROWS": stage.bias_rows, "LOOP_DEPTH": stage.loop_depth if loop else 1,
        "REQUEST_DEPTH": REQUEST_DEPTH, "ACTIVATION_DEPTH": ACTIVATION_DEPTH, "MAX_BURSTS": MAX_BURSTS,
        "ROW_TABLE_BEATS": stage.sequential_shape.row_table_beats, "BIAS_WORDS": stage.sequential_shape.bias_words,
        "SLOT_W": stage.sequential_shape.slot.width,
    }  # fmt: skip


def check_rtl_follows_the_plan(rtl: Path, plan: EnginePlan) -> None:
    core = (rtl / f"{plan.core}.v").read_text()
    instances = rtl_instances(core)
    load_port = plan.interface.load_port
    if load_port is None:
        assert "u_loader" not in instances
    else:  # one loader reads the whole load image, a row of a loaded stage a beat
        loader = instances["u_loader"]
        assert (int(loader["DATA_W"]), int(loader["BEATS"])) == (load_port.data_bits, load_port.image_beats)
        assert load_port.image_beats == sum(stage.layers[0].shape.rom_beats for stage in plan.loaded)
        assert len(plan.load_image) == load_port.image_beats * load_port.data_bits // 8
    for stage in plan.stages:
        found = instances[f"u_stage{stage.index}"]
        load_bits = load_port.data_bits if load_port is not None else 1
        for name, value in expected_stage_parameters(stage, load_bits).items():
            assert int(found[name]) == value, f"stage {stage.index} {name}: {found[name]} != {value}"
        if stage.rotations is not None:  # the table of rotations, r_a at bits [a * ROT_W +: ROT_W]
            width, packed = int(found["ROT_W"]), int(found["ROTATIONS"].split("'h")[1], 16)
            table = [(packed >> (address * width)) & ((1 << width) - 1) for address in range(stage.rotations.size)]
            assert table == stage.rotations.tolist(), f"stage {stage.index}"
        if stage.sequential and any(memory.role == "drained words" for memory in stage.memories):
            # a whole pass's words and its end word fit beside the slack: the drain never waits
            assert int(found["WORD_FIFO_DEPTH"]) >= stage.addresses + 1 + DRAIN_SLACK, f"stage {stage.index}"
        if not stage.sequential:
            # the slack holds every word in flight: the row decided to y (fg_stage.v DRAIN_LATENCY:
            # 6, a cycle more with stacked banks, with drain lanes' multiplexer and a level of a
            # private stage's adder tree), two word registers, the end word, the flag's register
            levels = (stage.units - 1).bit_length() if stage.private else 0
            in_flight = 6 + int(stage.stacked) + int(stage.drain_steps > 1) + levels
            assert DRAIN_SLACK >= in_flight + 4, f"stage {stage.index}: {in_flight} words in flight"
        # the banks: one block RAM a PE holding both (the bank its top address bit), or two memories
        banks = stage.memory("accumulators")
        if stage.stacked:
            assert (banks.kind, banks.count, banks.depth) == ("bram", stage.pes, 2 << stage.local_bits), stage.index
        else:
            copies = stage.units if stage.private else 1  # private: each unit's own P PEs
            assert (banks.count, banks.depth) == (2 * stage.pes * copies, stage.addresses), f"stage {stage.index}"
        for role, parameter in STAGE_STYLES[stage.sequential].items():
            if any(memory.role == role for memory in stage.memories):
                kind = stage.memory(role).kind
                assert found[parameter] == f'"{STYLES[kind]}"', f"stage {stage.index} {role}: {found[parameter]}"
    # Channel k: `subs` FIFOs of the schedule's depth, of the kind its producer's plan chose (a
    # deep channel's: the schedule's).
    producers = [plan.reader_memories, *(stage.memories for stage in plan.stages)]
    deep = plan.model.schedule.deep_channels
    for k, (channel, memories) in enumerate(zip(plan.channels, producers)):
        depth = channel.deep_depth if deep else CHANNEL_DEPTH
        (memory,) = [m for m in memories if m.role in ("input items", "output items")]
        assert (memory.count, memory.width, memory.depth) == (channel.subs, channel.item_bits, depth)
        if deep:  # a whole vector's items, every value nonzero
            assert depth >= channel.vector_items and memory.kind == deep, f"channel {k}: {memory.kind}"
        fifo = re.search(rf"g_ch{k}\b.*?fg_fifo #\((?P<params>.*?)\)\s*u_fifo", core, re.DOTALL)
        params = dict(_PARAMETER.findall(fifo["params"]))
        assert (int(params["WIDTH"]), int(params["DEPTH"]), int(params["SLACK"]), params["STYLE"]) == (
            channel.item_bits, depth, CHANNEL_SLACK, f'"{STYLES[memory.kind]}"'
        ), f"channel {k}"  # fmt: skip
        assert re.search(rf"for \(g{k} = 0; g{k} < {channel.subs};", core), f"channel {k}: {channel.subs} FIFOs"
    output = instances["u_out"]
    output_memory = plan.stages[-1].memory("output beats")
    assert (int(output["WIDTH"]), int(output["DEPTH"]), output["STYLE"]) == (
        plan.interface.out_bits + 1, OUTPUT_DEPTH, f'"{STYLES[output_memory.kind]}"'
    )  # fmt: skip
    reader = instances["u_reader"]
    groups = plan.reader_groups
    words = next(m for m in plan.reader_memories if m.role == "input words")
    assert (int(reader["LANES"]), int(reader["S"]), int(reader["G"]), int(reader["IDX_W"])) == (
        plan.in_lanes, groups.count, groups.size, plan.channels[0].index_bits
    )  # fmt: skip
    assert (int(reader["WORD_FIFO_DEPTH"]), reader["WORD_FIFO_STYLE"]) == (READER_WORD_DEPTH, f'"{STYLES[words.kind]}"')


# HLS -----------------------------------------------------------------------------------------------

_CONSTANT = re.compile(r"static const int (\w+) = (-?\d+);")


def hls_configs(header: str) -> dict[str, dict[str, int]]:
    """Every `namespace X { struct cfg { static const int ... } }` of the top header."""
    configs = {}
    for match in re.finditer(r"namespace (\w+) \{\nstruct cfg \{(.*?)\n\};", header, re.DOTALL):
        configs[match[1]] = {name: int(value) for name, value in _CONSTANT.findall(match[2])}
    return configs


def _stream_depths(source: str) -> dict[str, list[str]]:
    """`#pragma HLS STREAM variable=X depth=D` of a source: X -> every D given to it."""
    depths: dict[str, list[str]] = {}
    for name, depth in re.findall(r"#pragma HLS STREAM variable=(\w+) depth=(\S+)\n", source):
        depths.setdefault(name, []).append(depth)
    return depths


def check_hls_follows_the_plan(hls: Path, plan: EnginePlan) -> None:
    """The constants, types and stream depths of the HLS project are the plan's: every cfg constant
    of every stage, every channel's item type, sub-channels and FIFO depth, the reader's and the
    output's FIFOs, the storage the plan's memory kinds bind to, and the ports and the load phase."""
    header = (hls / f"{plan.top}.h").read_text()
    source = (hls / f"{plan.top}.cpp").read_text()
    configs = hls_configs(header)
    check_hls_ports_and_load_phase(hls, plan)
    rom_impl = {"bram": "bram", "lutram": "lutram", "uram": "uram", "registers": "lutram"}
    for stage in plan.stages:
        cfg = configs[stage.name]
        common = {
            "IN_SUBS": stage.input.subs, "PES": stage.pes, "ADDRESSES": stage.addresses,
            "ACC_BITS": stage.acc_bits, "LOCAL_BITS": stage.local_bits, "START_BITS": stage.start_bits,
            "COUNT_BITS": stage.count_bits, "ITEM_DEPTH": stage.memory("unit activations").depth,
            "WORD_DEPTH": next((m.depth for m in stage.memories if m.role == "drained words"), 1),
            "ROTATIONS": 1 if stage.rotations is None else stage.rotations.size,
        }  # fmt: skip
        rotations = [0] if stage.rotations is None else stage.rotations.tolist()
        table = (hls / "weights" / f"{stage.name}.h").read_text()
        assert f"cfg::rotation[cfg::ROTATIONS] = {{ {', '.join(map(str, rotations))} }};" in table, stage.name
        if stage.sequential:
            ports = [plan.interface.ports[k] for k in stage.ports]
            port = ports[0]
            expected = common | {
                "CHANNELS": stage.channels, "LOAD_BEATS": stage.sequential_shape.load_beats,
                "LAYERS": len(stage.layers), "ROWS": stage.rows, "BIAS_ROWS": stage.bias_rows,
                "IMAGE_BEATS": port.image_beats, "SLOT_LOCAL_BITS": stage.sequential_shape.slot.local_bits,
                "ROW_TABLE_BEATS": stage.sequential_shape.row_table_beats, "BIAS_WORDS": stage.sequential_shape.bias_words,
                "SLOT_WEIGHT_BITS": stage.sequential_shape.slot.weight_bits,
                "PE_SCALE": stage.encoding.pe_scale, "DRAIN_SCALE": stage.encoding.drain_scale,
                "TABLE_PARTS": stage.sequential_shape.table_parts,
                "REQUEST_DEPTH": stage.memory("row requests").depth,
                "WAITING_DEPTH": stage.memory("waiting activations").depth,
                "BEAT_DEPTH": stage.memory("PE entries").depth,
                "LOOP_DEPTH": stage.loop_depth if stage.loop else 1,
            }  # fmt: skip
            if stage.loop:
                assert stage.memory("loop-back items").depth == stage.loop_depth
            assert f"typedef ap_uint<{port.data_bits}> port_t;" in header
            assert f"typedef ap_uint<{8 * stage.sequential_shape.beat_bytes}> beat_t;" in header
            for port in ports:
                assert port.data_bits == 8 * stage.sequential_shape.port_bytes
                pragma = re.search(rf"INTERFACE mode=m_axi port={port.name} bundle={port.bundle} .*", source)[0]
                assert (
                    f"max_read_burst_length={port.max_burst} num_read_outstanding={MAX_BURSTS} "
                    f"latency={port.memory_latency}" in pragma
                )
        else:
            (layer,) = stage.layers
            expected = common | {
                "UNITS": stage.units, "GROUP": stage.groups.size, "N_IN": layer.shape.n_in,
                "N_OUT": layer.shape.n_out, "BIAS_ROWS": stage.memory("bias").depth, "BEATS": layer.shape.rom_beats,
                "WEIGHT_BITS": stage.encoding.weight_bits, "SUM_BITS": stage.sum_bits,
                "PE_SCALE": stage.encoding.pe_scale, "DRAIN_SCALE": stage.encoding.drain_scale, "SHIFT": layer.shift, "LO": layer.lo, "HI": layer.hi,
                "ROW_DEPTH": stage.memory("unit rows").depth, "DRAIN_LANES": stage.drain_lanes,
                "DRAIN_STEPS": stage.drain_steps, "DRAIN_ROWS": stage.drain_rows,
            }  # fmt: skip
            if not stage.private:
                expected["ENTRY_DEPTH"] = stage.memory("PE entries").depth
            if stage.loaded:  # its slots in a beat of the load chain, and the beats it passes on
                later = plan.loaded[plan.loaded.index(stage) + 1 :]
                expected |= {
                    "SLOT_BITS": layer.shape.slot.width,
                    "PASS_BEATS": sum(other.layers[0].shape.rom_beats for other in later),
                }
            run = source[source.index(f"void {stage.name}::run(") :]
            run = run[: run.index("\n}\n")]  # this stage's function only
            # the load phase writes a loaded stage's weights (a RAM); a ROM stage's are only read
            storage = "ram_2p" if stage.loaded else "rom_1p"
            bound = re.search(rf"BIND_STORAGE variable=cfg::rom type={storage} impl=(\w+)", run)
            assert bound is not None, f"stage {stage.index}: its weights are no {storage}"
            assert bound[1] == rom_impl[stage.memory("weights").kind], f"stage {stage.index}"
            assert len(re.findall(r"BIND_STORAGE variable=cfg::rom ", run)) == 1, f"stage {stage.index}"
            # PEs' slots apart; a loaded stage's copies (one per unit) apart too
            partitions = ["dim=1", "dim=3"] if stage.loaded else ["dim=2"]
            found = re.findall(r"ARRAY_PARTITION variable=cfg::rom type=complete (dim=\d)", run)
            assert found == partitions, f"stage {stage.index}"
            check_hls_weights_storage(hls, header, run, plan, stage)
            # a bias table of one row is constants: partitioned into its values, bound to no storage
            one_bias = stage.memory("bias").kind == "constant"
            assert ("BIND_STORAGE variable=cfg::bias" in run) != one_bias, f"stage {stage.index}"
            # one lookup and one issue process per unit, each on its own constant-indexed streams
            for unit in range(stage.units):
                copy = f"[{unit}]" if stage.loaded else ""
                assert f"fpgagen::issue<cfg>(rows[{unit}], entries[{unit}], cfg::rom{copy});" in run
            assert f"fpgagen::issue<cfg>(rows[{stage.units}]" not in run
            check_hls_pes(header, run, stage)
        assert cfg == expected, f"stage {stage.index}: {cfg} != {expected}"
        groups = stage.groups
        assert f"typedef fpgagen::word<{groups.size}, {groups.base_bits}, {groups.count_bits}> word_t;" in header, (
            f"stage {stage.index}"
        )
    depths = _stream_depths(source)
    producers = [plan.reader_memories, *(stage.memories for stage in plan.stages)]
    for k, (channel, memories) in enumerate(zip(plan.channels, producers)):
        (items,) = [m for m in memories if m.role in ("input items", "output items")]
        assert f"typedef fpgagen::item<{channel.index_bits}> ch{k}_item_t;" in header
        assert f"hls::stream<{plan.model.name}_stages::ch{k}_item_t> ch{k}[{channel.subs}];" in source
        assert depths[f"ch{k}"] == [str(items.depth)], f"channel {k}"
    (words,) = [m for m in plan.reader_memories if m.role == "input words"]
    assert f"static const int WORD_DEPTH = {words.depth};" in header
    groups = plan.reader_groups
    assert f"typedef fpgagen::word<{groups.size}, {groups.base_bits}, {groups.count_bits}> word_t;" in header
    assert depths["dense"] == [str(plan.stages[-1].memory("output beats").depth)]
    assert f"static const int BEATS = {plan.stages[-1].layers[-1].shape.addresses};" in header


def check_hls_pes(header: str, run: str, stage: StagePlan) -> None:
    """A dataflow stage's PEs: shared, each PE's entry FIFOs (one per unit) the plan's; or `private`,
    each unit's own P PEs fed without a FIFO (streams of fpgagen::DIRECT_DEPTH entries, no plan
    memory), banks per (unit, lane) that the drain adds over the units."""
    cfg = re.search(rf"namespace {stage.name} \{{\nstruct cfg \{{(.*?)\n\}};", header, re.DOTALL)[1]
    assert "        hls::stream<cfg::entry_t> entries[cfg::UNITS][cfg::PES];\n" in run, f"stage {stage.index}"
    assert "#pragma HLS STREAM variable=entries depth=cfg::ENTRY_DEPTH\n" in run, f"stage {stage.index}"
    kind = "private" if stage.private else "stacked" if stage.stacked else "shared"
    drain = "dense" if stage.last else "words"
    out = "words" if drain == "words" else "out"
    # a stage that skips quiet vectors: its PEs' flag a vector to its drain (stacked: one process)
    flag, read = (", quiet", "quiet, ") if stage.skips_quiet else ("", "")
    calls = {
        "private": [
            f"fpgagen::private_pes<cfg>(entries, acc{flag});",
            f"fpgagen::drain_{drain}<cfg>(acc, {read}{out});",
        ],
        "stacked": [f"fpgagen::pes_then_drain_{drain}<cfg>(entries, {out});"],
        "shared": [f"fpgagen::pes<cfg>(entries, acc{flag});", f"fpgagen::drain_{drain}<cfg>(acc, {read}{out});"],
    }[kind]
    assert ("hls::stream<bool> quiet;" in run) == (stage.skips_quiet and kind != "stacked"), f"stage {stage.index}"
    assert f"static const bool SKIPS_QUIET = {'true' if stage.skips_quiet else 'false'};" in cfg, f"stage {stage.index}"
    found = re.findall(r"fpgagen::(?:\w*pes\w*|\w*drain_\w+)<cfg>\([^;]*\);", run)
    assert found == calls, f"stage {stage.index}: {found}"
    partitions = re.findall(r"ARRAY_PARTITION variable=acc type=complete (dim=\d)", run)
    if stage.private:
        assert not any(m.role == "PE entries" for m in stage.memories), f"stage {stage.index}"
        assert "    static const int ENTRY_DEPTH = fpgagen::DIRECT_DEPTH;" in cfg, f"stage {stage.index}"
        assert "#pragma HLS BIND_STORAGE variable=entries type=fifo impl=srl\n" in run, f"stage {stage.index}"
        assert "        cfg::acc_t acc[cfg::UNITS][cfg::PES][cfg::ADDRESSES];" in run, f"stage {stage.index}"
        assert partitions == ["dim=1", "dim=2"], f"stage {stage.index}"  # a bank per (unit, lane)
    else:
        assert "DIRECT_DEPTH" not in cfg, f"stage {stage.index}"
        impl = re.search(r"BIND_STORAGE variable=entries type=fifo impl=(\w+)\n", run)
        assert impl is not None, f"stage {stage.index}"
        assert partitions == ([] if stage.stacked else ["dim=1"]), f"stage {stage.index}"


def check_hls_weights_storage(hls: Path, header: str, run: str, plan: EnginePlan, stage: StagePlan) -> None:
    """A ROM stage's weights are const and initialized in its weights header; a loaded stage's are
    a RAM without initializer that its run function fills at a batch's start from its link of the
    load chain, before its vector loop, passing the later loaded stages' rows on."""
    cfg = re.search(rf"namespace {stage.name} \{{\nstruct cfg \{{(.*?)\n\}};", header, re.DOTALL)[1]
    weights = (hls / "weights" / f"{stage.name}.h").read_text()
    initialized = "const cfg::slot_t cfg::rom[cfg::BEATS][cfg::PES] = {\n" in weights
    if not stage.loaded:
        assert "    static const slot_t rom[BEATS][PES];" in cfg and initialized, f"stage {stage.index}"
        assert "load_in" not in run, f"stage {stage.index}"
        return
    memory = stage.memory("weights")
    assert (memory.kind, memory.count) == ("uram", stage.units), f"stage {stage.index}"
    assert "    static slot_t rom[UNITS][BEATS][PES];  // filled by the load phase: a copy per issue unit" in cfg
    assert "\ncfg::slot_t cfg::rom[cfg::UNITS][cfg::BEATS][cfg::PES];\n" in weights and not initialized
    last = stage is plan.loaded[-1]  # it passes nothing on: no stream out
    load = "    if (batch > 0) {\n        fpgagen::load_rows<cfg>(load_in);\n"
    if not last:
        load += "        fpgagen::pass_on<cfg::PASS_BEATS>(load_in, load_out);\n"
    assert load + "    }\n    for (int v = 0; v < batch; ++v) {\n#pragma HLS DATAFLOW\n" in run, f"stage {stage.index}"
    out = "" if last else " hls::stream<load_beat>& load_out,"
    assert f"hls::stream<load_beat>& load_in,{out} int batch) {{\n" in run, f"stage {stage.index}"


def check_hls_ports_and_load_phase(hls: Path, plan: EnginePlan) -> None:
    """The top function's pointers are the plan's ports, in port order (the AXI4-Lite registers are
    the ControlMap's), the load port's m_axi interface is the plan's, a `loader` process reads the
    load image a beat a cycle into the load chain, and each link of the chain has one producer and
    one consumer: the loader or a loaded stage, then the next loaded stage in the plan's order."""
    header = (hls / f"{plan.top}.h").read_text()
    source = (hls / f"{plan.top}.cpp").read_text()
    namespace = f"{plan.model.name}_stages"
    top = source[source.index(f"\nvoid {plan.top}(") :]
    for text in (top, header[header.index(f"\nvoid {plan.top}(") :]):
        pointers = re.findall(r"const ap_uint<(\d+)>\* (weights\d+),", text)
        assert pointers == [(str(port.data_bits), port.name) for port in plan.interface.ports]
    bench = (hls / f"tb_{plan.top}.cpp").read_text()
    config = (hls / "hls_config.cfg").read_text()
    script = (hls / "run_hls.tcl").read_text()
    for port in plan.interface.ports:
        assert f"INTERFACE mode=s_axilite port={port.name} bundle=control\n" in top
        assert f'weights + "/{port.image}"' in bench and f"tb.file=../{port.image}\n" in config
        assert f"add_files -tb $here/../{port.image}\n" in script
    port = plan.interface.load_port
    if port is None:
        assert "load_beat" not in header and "loader::run" not in source
        return
    interface = f"#pragma HLS INTERFACE mode=m_axi port={port.name} bundle={port.bundle} offset=slave"
    pragma = re.search(rf"{interface} (.*)\n", top)
    assert pragma[1] == (
        f"depth={port.image_beats} max_read_burst_length={port.max_burst} num_read_outstanding={MAX_BURSTS} "
        f"latency={port.memory_latency}"
    )
    assert port.image_beats == sum(stage.layers[0].shape.rom_beats for stage in plan.loaded)
    assert f"typedef ap_uint<{port.data_bits}> load_beat;" in header
    assert f"namespace loader {{\nstatic const int BEATS = {port.image_beats};\n" in header
    signature = "void loader::run(const load_beat* image, hls::stream<load_beat>& out, int batch) {"
    loader = source[source.index(signature) :]
    loader = loader[: loader.index("\n}\n")]
    assert (
        "    if (batch > 0) {\n        for (int t = 0; t < BEATS; ++t) {\n#pragma HLS PIPELINE II=1\n"
        "            out.write(image[t]);\n" in loader
    )  # a beat a cycle from consecutive addresses: bursts
    links = len(plan.loaded)
    assert f"    hls::stream<{namespace}::load_beat> load[{links}];\n" in top
    assert _stream_depths(top)["load"] == ["2"]  # two beats of registers a link: the RTL's chain has one
    assert f"    {namespace}::loader::run({port.name}, load[0], batch);\n" in top
    for link, stage in enumerate(plan.loaded):
        passed = f" load[{link + 1}]," if link + 1 < links else ""
        call = rf"\n    {namespace}::{stage.name}::run\(\w+, \w+, {re.escape(f'load[{link}],{passed}')} batch\);\n"
        assert re.search(call, top), f"stage {stage.index}"
    code = re.sub(r"//.*", "", top)
    for link in range(links):  # its producer and its consumer
        assert len(re.findall(rf"\bload\[{link}\]", code)) == 2, f"load[{link}]"


# RTL as elaborated ------------------------------------------------------------------------------------

# Where each of the plan's memories is in the core: (instance path pattern, owner, role). An owner is
# "stage<s>", "channel<k>" or "output".
_PE = r"g_pe\[\d+\]\.(?:g_shared\.|g_private\.g_copy\[\d+\]\.)?u_pe"
_RTL_MEMORIES = [
    (r"g_ch(\d+)\[\d+\]\.u_fifo\.mem", "channel", "items"),
    (r"u_out\.mem", "output", "output beats"),
    (r"u_reader\.g_group\[\d+\]\.u_words\.mem", "reader", "input words"),
    (r"u_stage(\d+)\.g_rom\[\d+\]\.u_rows\.mem", "stage", "row table"),
    (r"u_stage(\d+)\.u_rows\.u_ram\.mem", "stage", "row table"),  # a sequential stage's (fg_table)
    (r"u_stage(\d+)\.g_rom\[\d+\]\.g_weights\.u_weights\.mem", "stage", "weights"),
    (r"u_stage(\d+)\.g_loaded\.g_copy\[\d+\]\.u_weights\.u_ram\.mem", "stage", "weights"),  # in UltraRAM (fg_table)
    (r"u_stage(\d+)\.u_bias\.mem", "stage", "bias"),
    (r"u_stage(\d+)\.u_bias\.u_ram\.mem", "stage", "bias"),  # a sequential stage's (fg_table)
    (r"u_stage(\d+)\.g_unit\[\d+\]\.u_items\.mem", "stage", "unit activations"),
    (r"u_stage(\d+)\.u_items\.mem", "stage", "unit activations"),
    (r"u_stage(\d+)\.g_unit\[\d+\]\.u_unit\.u_rows\.mem", "stage", "unit rows"),
    # a PE: a sequential stage's, a dataflow stage's shared one, or unit u's private one of lane p
    (rf"u_stage(\d+)\.{_PE}\.g_queued\.g_fifo\[\d+\]\.u_fifo\.mem", "stage", "PE entries"),
    (rf"u_stage(\d+)\.{_PE}\.g_single_cycle\.u_bank[01]\.mem", "stage", "accumulators"),
    (rf"u_stage(\d+)\.{_PE}\.g_pipelined\.g_banks\.u_bank[01]\.mem", "stage", "accumulators"),
    (rf"u_stage(\d+)\.{_PE}\.g_pipelined\.g_stacked\.u_banks\.mem", "stage", "accumulators"),  # both
    (r"u_stage(\d+)\.g_sparse\.g_group\[\d+\]\.u_words\.mem", "stage", "drained words"),
    (r"u_stage(\d+)\.g_order\.u_order\.mem", "stage", "vector order"),
    (r"u_stage(\d+)\.g_serialize\.u_words\.mem", "stage", "drained words"),
    (r"u_stage(\d+)\.u_desc\.mem", "stage", "descriptors"),
    (r"u_stage(\d+)\.g_channel\[\d+\]\.u_requests\.mem", "stage", "row requests"),  # one per channel
    (r"u_stage(\d+)\.u_acts\.mem", "stage", "waiting activations"),
    (r"u_stage(\d+)\.g_loop_back\.u_loop\.mem", "stage", "loop-back items"),
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

    # A memory read through two ports is one array with two read ports in the Verilog.
    (words, first) = plan.reader_memories
    add("reader", words.role, words)
    add("channel0", "items", first)
    for stage in plan.stages:
        for memory in stage.memories:
            if memory.role == "output beats":
                add("output", memory.role, memory)
            elif memory.role == "output items":  # the next stage's channel
                add(f"channel{stage.index + 1}", "items", memory)
            else:
                add(f"stage{stage.index}", memory.role, memory)
    assert {key: sorted(value) for key, value in built.items()} == {
        key: sorted(value) for key, value in planned.items()
    }
