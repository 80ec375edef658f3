"""The RTL back end: the engine's Verilog library, a generated top level and its memory files.

Every parameter comes from the engine plan (fpgagen.engine); the top-level templates only wire
the library blocks (`templates/rtl/lib/`) together, and the weights go to `$readmemh` files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ... import __version__
from ...engine import EnginePlan, LayerPlan, StagePlan
from ...engine.encoding import Encoding
from ...engine.geometry import (
    ACTIVATION_DEPTH,
    CHANNEL_SLACK,
    DRAIN_SLACK,
    ITEM_FIFO_DEPTH,
    ITEM_SLACK,
    MAX_BURSTS,
    ORDER_DEPTH,
    OUTPUT_DEPTH,
    PE_SLACK,
    READER_WORD_DEPTH,
    REQUEST_DEPTH,
    ROW_FIFO_DEPTH,
    VALUE_BITS,
    Channel,
    Groups,
    bits_for,
    log2,
)
from ...engine.memory import BRAM, CONSTANT, LUTRAM, REGISTERS, URAM, Memory
from ...templating import environment, template_bytes
from ..memfile import hex_lines, pack_fields

# The synthesis attribute (ram_style, rom_style) that puts a memory in the kind the plan chose (a
# constant, a ROM of one word, becomes the logic that reads it whatever its attribute).
STYLES = {BRAM: "block", LUTRAM: "distributed", URAM: "ultra", REGISTERS: "registers", CONSTANT: "distributed"}

LIBRARY = (
    "fg_fifo.v", "fg_rom.v", "fg_ram.v", "fg_lutram.v", "fg_table.v", "fg_resize.v", "fg_all.v", "fg_select.v", "fg_serializer.v", "fg_merger.v",
    "fg_unit.v", "fg_pe.v", "fg_requantize.v", "fg_dense.v", "fg_stage.v", "fg_seq_stage.v", "fg_axi_reader.v", "fg_reader.v", "fg_control.v",
    "fg_axilite_ctrl.v", "fg_loader.v",
)  # fmt: skip


def emit_rtl(plan: EnginePlan, folder: Path) -> None:
    """Write the Verilog of an engine plan into `folder` (OUTDIR/rtl)."""
    folder.mkdir(parents=True, exist_ok=True)
    memories = folder / "mem"
    memories.mkdir(exist_ok=True)
    for name in LIBRARY:
        (folder / name).write_bytes(template_bytes("rtl", f"lib/{name}"))
    load_port = plan.interface.load_port
    load_bits = load_port.data_bits if load_port is not None else 1
    stages = [
        _sequential_stage(plan, stage, memories) if stage.sequential else _dataflow_stage(stage, memories, load_bits)
        for stage in plan.stages
    ]
    control = plan.interface.control
    producers = [plan.reader_memories, *(stage.memories for stage in plan.stages)]
    channels = [
        {"subs": c.subs, "item_bits": c.item_bits, "depth": c.depth, "style": style(_role(found, ("input items", "output items")))}
        for c, found in zip(plan.channels, producers)
    ]  # fmt: skip
    context = {
        "version": __version__,
        "model": plan.model.name,
        "top": plan.top,
        "core": plan.core,
        "in_bits": plan.interface.in_bits,
        "out_bits": plan.interface.out_bits,
        "channels": channels,
        "channel_slack": CHANNEL_SLACK,
        "reader": _reader(plan),
        "output_depth": OUTPUT_DEPTH,
        "output_slack": DRAIN_SLACK,
        "output_style": style(plan.stages[-1].memory("output beats")),
        "stages": stages,
        "sequential": [stage for stage in stages if stage["port"] is not None],
        "ports": [{"port": port.port, "data_bits": port.data_bits} for port in plan.interface.ports],
        "loader": _loader(plan),
        "control": control,
        "arg_addresses": _packed_addresses(control.words),
    }
    env = environment("rtl")
    for template, module in (("core.v.j2", plan.core), ("top.v.j2", plan.top)):
        (folder / f"{module}.v").write_text(env.get_template(template).render(context))


def style(memory: Memory) -> str:
    """The synthesis attribute value of a memory's kind, quoted for a Verilog parameter."""
    return f'"{STYLES[memory.kind]}"'


def _role(memories: list[Memory] | tuple[Memory, ...], roles: tuple[str, ...]) -> Memory:
    (found,) = [memory for memory in memories if memory.role in roles]
    return found


def _packed_addresses(words: tuple[int, ...]) -> str:
    """ARG_ADDRS of fg_axilite_ctrl: 16 bits per word, word 0 in the least significant bits."""
    return f"{16 * len(words)}'h" + "".join(f"{address:04x}" for address in reversed(words))


def _out_index_bits(stage: StagePlan) -> int:
    """Index width of the items a stage writes to its output channel (1: it drains dense beats)."""
    return stage.output.index_bits if isinstance(stage.output, Channel) else 1


def _group_parameters(groups: Groups) -> list[tuple[str, int]]:
    """A word's groups as the serializers take them (fpgagen.engine.geometry.Groups)."""
    return [("G", groups.size), ("GB", groups.position_bits), ("COUNT_W", groups.count_bits)]


def _loader(plan: EnginePlan) -> dict | None:
    """The load phase of the dataflow stages whose weights are in UltraRAM: its port, and the
    stages in the order the load chain passes them."""
    port = plan.interface.load_port
    if port is None:
        return None
    parameters = [("DATA_W", port.data_bits), ("BEATS", port.image_beats), ("MAX_BURSTS", MAX_BURSTS)]
    return {"port": port.port, "data_bits": port.data_bits, "parameters": parameters,
            "stages": [stage.index for stage in plan.loaded]}  # fmt: skip


def _reader(plan: EnginePlan) -> dict:
    groups = plan.reader_groups
    parameters = [
        ("LANES", plan.lanes), ("S", groups.count), *_group_parameters(groups),
        ("N_IN", plan.model.in_features), ("BEAT_W", groups.base_bits), ("IDX_W", plan.channels[0].index_bits),
        ("WORD_FIFO_DEPTH", READER_WORD_DEPTH),
        ("WORD_FIFO_STYLE", style(_role(plan.reader_memories, ("input words",)))),
    ]  # fmt: skip
    return {"parameters": parameters}


def _stage_context(
    stage: StagePlan, module: str, description: str, parameters: list, data_bits: int | None = None
) -> dict:
    return {
        "index": stage.index,
        "mode": stage.mode,
        "pes": stage.pes,
        "units": stage.units,
        "port": stage.port,
        "ports": list(stage.ports),  # a sequential stage's AXI4 masters, channel 0 first
        "loaded": stage.loaded,
        "data_bits": data_bits,  # of its AXI4 master, a sequential stage
        "dense_bits": VALUE_BITS * stage.pes,
        "last": stage.last,
        "layers": stage.layers,
        "in_subs": stage.input.subs,
        "in_item_bits": stage.input.item_bits,
        "out_subs": stage.output.subs if isinstance(stage.output, Channel) else stage.units,
        "out_item_bits": 1 + _out_index_bits(stage) + VALUE_BITS,
        "module": module,
        "description": description,
        "parameters": parameters,
    }


def _fifo_parameters(stage: StagePlan) -> list[tuple[str, object]]:
    """Depths, slacks and kinds shared by both kinds of stage; private PEs have no entry FIFO
    (depth 0, its kind unused)."""
    entries, words = stage.optional_memory("PE entries"), _word_fifo(stage)
    return [
        ("PE_FIFO_DEPTH", entries.depth if entries else 0), ("PE_SLACK", PE_SLACK), ("ITEM_FIFO_DEPTH", ITEM_FIFO_DEPTH),
        ("ITEM_SLACK", ITEM_SLACK), ("WORD_FIFO_DEPTH", words.depth), ("DRAIN_SLACK", DRAIN_SLACK),
        ("BIAS_STYLE", style(stage.memory("bias"))), ("ACC_STYLE", style(stage.memory("accumulators"))),
        ("SINGLE_CYCLE", int(stage.logic.single_cycle)),
        ("PE_FIFO_STYLE", style(entries or stage.memory("accumulators"))),
        ("ITEM_FIFO_STYLE", style(stage.memory("unit activations"))),
        ("WORD_FIFO_STYLE", style(words)),
    ]  # fmt: skip


def _word_fifo(stage: StagePlan) -> Memory:
    """The drained words' FIFOs; a stage that only writes dense beats has none, so its (unused)
    parameter takes the kind of its output FIFO."""
    return stage.optional_memory("drained words") or stage.memory("output beats")


def _dataflow_stage(stage: StagePlan, memories: Path, load_bits: int) -> dict:
    """A dataflow stage; `load_bits`: the load chain's width (its weights come through it when
    they are in UltraRAM, and no file initializes them)."""
    (layer,) = stage.layers
    files = {kind: f"mem/s{stage.index}_{kind}.mem" for kind in ("rows", "weights", "bias")}
    (memories.parent / files["rows"]).write_bytes(_row_table(stage))
    if stage.loaded:
        files["weights"] = ""
    else:
        (memories.parent / files["weights"]).write_bytes(_weights(layer))
    (memories.parent / files["bias"]).write_bytes(_bias_rows(stage))
    groups = stage.groups
    parameters = [
        ("S", stage.input.subs), ("K", stage.units), ("P", stage.pes),
        ("D", stage.drain_lanes), ("STEP_W", log2(stage.drain_steps)), *_group_parameters(groups),
        ("IN_IDX_W", stage.input.index_bits), ("OUT_IDX_W", _out_index_bits(stage)),
        ("N_IN", layer.shape.n_in), ("N_OUT", layer.shape.n_out), ("ADDRESSES", stage.addresses),
        ("LOCAL_W", stage.local_bits), ("ROWS_W", groups.base_bits), ("BEATS", layer.shape.rom_beats),
        ("START_W", stage.start_bits), ("CNT_W", stage.count_bits), *_encoding_parameters(stage),
        ("ACC_W", stage.acc_bits), ("SUM_W", stage.sum_bits), ("BIAS_ROWS", stage.bias_rows),
        ("SHIFT", layer.shift), ("LO", layer.lo), ("HI", layer.hi),
        ("DENSE", int(stage.last)), *_rotation_parameters(stage), ("ROW_FIFO_DEPTH", ROW_FIFO_DEPTH),
        *_fifo_parameters(stage),
        ("ROWS_FILE", f'"{files["rows"]}"'), ("WEIGHTS_FILE", f'"{files["weights"]}"'),
        ("BIAS_FILE", f'"{files["bias"]}"'),
        ("ROWS_STYLE", style(stage.memory("row table"))), ("WEIGHTS_STYLE", style(stage.memory("weights"))),
        ("ROW_FIFO_STYLE", style(stage.memory("unit rows"))),
        ("LOADED", int(stage.loaded)), ("LOAD_W", load_bits), ("STACKED", int(stage.stacked)),
        ("PRIVATE", int(stage.private)), ("QUIET", int(stage.passes_empty)), ("ORDER_DEPTH", ORDER_DEPTH),
    ]  # fmt: skip
    where = "in UltraRAM, loaded at a batch's start" if stage.loaded else "in ROM"
    banks = ", both banks in one block RAM" if stage.stacked else ""
    pes = f"{stage.units} x {stage.pes} private PEs" if stage.private else f"{stage.pes} PE(s)"
    description = f"dataflow, layer {layer.name}, {pes}, {stage.units} issue unit(s), weights {where}{banks}"
    return _stage_context(stage, "fg_stage", description, parameters)


def _sequential_stage(plan: EnginePlan, stage: StagePlan, memories: Path) -> dict:
    files = {"desc": f"mem/s{stage.index}_desc.mem"}  # its tables come from off chip (the load phase)
    descriptors = [_descriptor(layer) for layer in stage.layers]
    (memories.parent / files["desc"]).write_bytes(hex_lines(pack_fields(_transpose(descriptors))))
    loop = stage.loop
    groups = stage.groups
    parameters = [
        ("S", stage.input.subs), ("P", stage.pes), ("PB", log2(stage.pes)),
        ("GB", groups.position_bits), ("COUNT_W", groups.count_bits), ("LAYERS", len(stage.layers)),
        ("IN_IDX_W", stage.input.index_bits), ("LOOP_IDX_W", loop.index_bits if loop else 1),
        ("OUT_IDX_W", _out_index_bits(stage)),
        ("ADDRESSES", stage.addresses), ("LOCAL_W", stage.local_bits), ("ROWS", stage.rows),
        ("START_W", stage.start_bits), ("CNT_W", stage.count_bits),
        ("W_BITS", stage.encoding.weight_bits), ("SLOT_W", stage.sequential_shape.slot.width),
        ("CHANNELS", stage.channels),
        ("ACC_W", stage.acc_bits), ("SUM_W", stage.sum_bits), *_scale_parameters(stage.encoding),
        ("BIAS_ROWS", stage.bias_rows), ("DENSE", int(stage.last)), *_rotation_parameters(stage),
        ("ROTATED_ADDRESSES", stage.layers[-1].shape.addresses), *_fifo_parameters(stage),
        ("LOOP_DEPTH", stage.loop_depth if loop else 1), ("LOOP_SLACK", CHANNEL_SLACK),
        ("REQUEST_DEPTH", REQUEST_DEPTH), ("ACTIVATION_DEPTH", ACTIVATION_DEPTH), ("MAX_BURSTS", MAX_BURSTS),
        ("ROW_TABLE_BEATS", stage.sequential_shape.row_table_beats), ("BIAS_WORDS", stage.sequential_shape.bias_words),
        ("DESC_FILE", f'"{files["desc"]}"'),
        ("DESC_STYLE", style(stage.memory("descriptors"))), ("ROWS_STYLE", style(stage.memory("row table"))),
        ("REQUEST_STYLE", style(stage.memory("row requests"))),
        ("ACTIVATION_STYLE", style(stage.memory("waiting activations"))),
        *([("LOOP_STYLE", style(stage.memory("loop-back items")))] if loop else []),
    ]  # fmt: skip
    names = ", ".join(layer.name for layer in stage.layers)
    gmems = ", ".join(f"gmem{port}" for port in stage.ports)
    description = f"sequential, layers {names}, {stage.pes} PE(s), weights from {gmems}"
    return _stage_context(stage, "fg_seq_stage", description, parameters, plan.interface.ports[stage.port].data_bits)


def _rotation_parameters(stage: StagePlan) -> list[tuple[str, object]]:
    """The dense beats' rotator (fg_dense.v): r_a of address a at bits [a * ROT_W +: ROT_W]."""
    rotations = stage.rotations
    if rotations is None:
        return [("ROTATED", 0)]
    width = bits_for(stage.pes - 1)
    packed = sum(int(turn) << (address * width) for address, turn in enumerate(rotations))
    return [("ROTATED", 1), ("ROT_W", width), ("ROTATIONS", f"{width * rotations.size}'h{packed:x}")]


def _encoding_parameters(stage: StagePlan) -> list[tuple[str, object]]:
    """The PEs' weight slots; a codebook's values, packed, index i at bits [i * CB_W +: CB_W] (the
    table padded with zeros to 2^W_BITS entries); positions only, the shared weight and its log2
    (-1: no power of two, the PEs multiply by it) (fg_pe.v)."""
    encoding = stage.encoding
    width = encoding.codebook_bits
    packed = sum((value & ((1 << width) - 1)) << (index * width) for index, value in enumerate(encoding.codebook))
    codebook = [("CODEBOOK", f"{width << encoding.weight_bits}'h{packed:x}")] if encoding.indexed else []
    return [("W_BITS", encoding.weight_bits), ("CB_W", width), *codebook, *_scale_parameters(encoding)]


def _scale_parameters(encoding: Encoding) -> list[tuple[str, object]]:
    """Positions only: the shared weight and its log2 (-1: no power of two, the PEs multiply by it)."""
    shift = encoding.scale_shift
    return [("SCALE", encoding.scale), ("SCALE_SHIFT", -1 if shift is None else shift)]


def _row_table(stage: StagePlan) -> bytes:
    """One word per input row of the stage's layers: {start beat, beats}."""
    return hex_lines(pack_fields([(stage.row_beats, stage.count_bits), (stage.row_start, stage.start_bits)]))


def _weights(layer: LayerPlan) -> bytes:
    """One word per beat: the PEs' slot words side by side, PE 0 in the lowest bits."""
    words = layer.rom_words
    width = layer.shape.slot.width
    return hex_lines(pack_fields([(words[:, p], width) for p in range(words.shape[1])]))


def _bias_rows(stage: StagePlan) -> bytes:
    """One word per row r of the bias table (StagePlan.bias: a drain row, or a sequential stage's
    local address): its lanes' biases, 0 past the last output, each with its layer's rounding term
    (the drain adds one number before the shift)."""
    bias = stage.rounded_bias
    return hex_lines(pack_fields([(bias[:, lane], stage.acc_bits) for lane in range(bias.shape[1])]))


def _descriptor(layer: LayerPlan) -> list[int]:
    """The sequential stage's per-layer parameters, eight 32-bit fields (see fg_seq_stage.v)."""
    return [
        layer.shape.n_out, layer.shape.addresses, layer.row_offset, layer.bias_offset,
        layer.offchip_base & 0xFFFFFFFF, layer.offchip_base >> 32, layer.shift,
        (layer.lo & 0xFFFF) | ((layer.hi & 0xFFFF) << 16),
    ]  # fmt: skip


def _transpose(descriptors: list[list[int]]) -> list[tuple[np.ndarray, int]]:
    return [(np.array(column, dtype=np.int64), 32) for column in zip(*descriptors)]
