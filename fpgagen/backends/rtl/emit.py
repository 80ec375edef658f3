"""The RTL back end: the engine's Verilog library, a generated top level and its memory files.

Every parameter comes from the engine plan (fpgagen.engine); the top-level templates only wire
the library blocks (`templates/rtl/lib/`) together, and the weights go to `$readmemh` files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ... import __version__
from ...engine import EnginePlan, LayerPlan, StagePlan
from ...engine.geometry import (
    ACTIVATION_DEPTH,
    MASK_DEPTH,
    MAX_BURSTS,
    OUTPUT_DEPTH,
    REQUEST_DEPTH,
    VALUE_BITS,
    Channel,
)
from ...engine.memory import BRAM, LUTRAM, REGISTERS, Memory
from ...templating import environment, template_bytes
from ..memfile import hex_lines, pack_fields

# The synthesis attribute (ram_style, rom_style) that puts a memory in the kind the plan chose.
STYLES = {BRAM: "block", LUTRAM: "distributed", REGISTERS: "registers"}

LIBRARY = (
    "fg_fifo.v", "fg_rom.v", "fg_ram.v", "fg_resize.v", "fg_lane_reader.v", "fg_pe_array.v", "fg_df_stage.v",
    "fg_seq_stage.v", "fg_axi_reader.v", "fg_input_reader.v", "fg_control.v", "fg_axilite_ctrl.v",
    "fg_lane_writer.v",
)  # fmt: skip


def emit_rtl(plan: EnginePlan, folder: Path) -> None:
    """Write the Verilog of an engine plan into `folder` (OUTDIR/rtl)."""
    folder.mkdir(parents=True, exist_ok=True)
    memories = folder / "mem"
    memories.mkdir(exist_ok=True)
    for name in LIBRARY:
        (folder / name).write_bytes(template_bytes("rtl", f"lib/{name}"))
    stages = [
        _sequential_stage(plan, stage, memories) if stage.sequential else _dataflow_stage(stage, memories)
        for stage in plan.stages
    ]
    control = plan.interface.control
    channels = [
        {"name": f"ch{k}", "lanes": c.lanes, "item_bits": c.item_bits, "lane_depth": c.lane_depth,
         "lane_style": style(lanes), "mask_style": style(mask)}
        for k, c in enumerate(plan.channels)
        for lanes, mask in [c.memories("channel")]
    ]  # fmt: skip
    (output_fifo,) = [m for m in plan.stages[-1].memories if m.role == "output beats"]
    context = {
        "version": __version__,
        "model": plan.model.name,
        "top": plan.top,
        "core": plan.core,
        "in_lanes": plan.in_lanes,
        "out_lanes": plan.out_lanes,
        "in_bits": plan.interface.in_bits,
        "out_bits": plan.interface.out_bits,
        "n_in": plan.model.in_features,
        "channels": channels,
        "reader_index_bits": plan.channels[0].index_bits,
        "mask_depth": MASK_DEPTH,
        "output_depth": OUTPUT_DEPTH,
        "output_style": style(output_fifo),
        "stages": stages,
        "sequential": [stage for stage in stages if stage["port"] is not None],
        "control": control,
        "arg_addresses": _packed_addresses(control.words),
    }
    env = environment("rtl")
    for template, module in (("core.v.j2", plan.core), ("top.v.j2", plan.top)):
        (folder / f"{module}.v").write_text(env.get_template(template).render(context))


def style(memory: Memory) -> str:
    """The synthesis attribute value of a memory's kind, quoted for a Verilog parameter."""
    return f'"{STYLES[memory.kind]}"'


def _packed_addresses(words: tuple[int, ...]) -> str:
    """ARG_ADDRS of fg_axilite_ctrl: 16 bits per word, word 0 in the least significant bits."""
    return f"{16 * len(words)}'h" + "".join(f"{address:04x}" for address in reversed(words))


def _out_index_bits(stage: StagePlan) -> int:
    """Index width of the items a stage writes to its output channel (1: it drains dense beats)."""
    return stage.output.index_bits if isinstance(stage.output, Channel) else 1


def _stage_context(
    stage: StagePlan, module: str, description: str, parameters: list, data_bits: int | None = None
) -> dict:
    return {
        "index": stage.index,
        "mode": stage.mode,
        "pes": stage.pes,
        "port": stage.port,
        "data_bits": data_bits,  # of its AXI4 master, a sequential stage
        "dense_bits": VALUE_BITS * stage.pes,
        "last": stage.last,
        "layers": stage.layers,
        "out_item_bits": 1 + _out_index_bits(stage) + VALUE_BITS,
        "module": module,
        "description": description,
        "parameters": parameters,
    }


def _dataflow_stage(stage: StagePlan, memories: Path) -> dict:
    (layer,) = stage.layers
    files = {kind: f"mem/s{stage.index}_{kind}.mem" for kind in ("rows", "entries", "bias")}
    (memories.parent / files["rows"]).write_bytes(_row_table(stage))
    (memories.parent / files["entries"]).write_bytes(_entries(layer))
    (memories.parent / files["bias"]).write_bytes(_bias_rows(stage))
    parameters = [
        ("B", stage.input.lanes), ("P", stage.pes), ("IN_IDX_W", stage.input.index_bits),
        ("OUT_IDX_W", _out_index_bits(stage)),
        ("N_IN", layer.shape.n_in), ("N_OUT", layer.shape.n_out), ("ADDRESSES", stage.addresses),
        ("LOCAL_W", stage.local_bits), ("BEATS", layer.shape.rom_beats),
        ("START_W", stage.start_bits), ("CNT_W", stage.count_bits), ("W_BITS", stage.weight_bits),
        ("ACC_W", stage.acc_bits), ("SHIFT", layer.shift), ("LO", layer.lo), ("HI", layer.hi),
        ("DENSE", int(stage.last)),
        ("ROWS_FILE", f'"{files["rows"]}"'), ("ENTRIES_FILE", f'"{files["entries"]}"'),
        ("BIAS_FILE", f'"{files["bias"]}"'),
        ("ROWS_STYLE", style(stage.memory("row table"))), ("WEIGHTS_STYLE", style(stage.memory("weights"))),
        ("BIAS_STYLE", style(stage.memory("bias"))), ("ACC_STYLE", style(stage.memory("accumulators"))),
    ]  # fmt: skip
    description = f"dataflow, layer {layer.name}, {stage.pes} PE(s), weights on chip"
    return _stage_context(stage, "fg_df_stage", description, parameters)


def _sequential_stage(plan: EnginePlan, stage: StagePlan, memories: Path) -> dict:
    files = {kind: f"mem/s{stage.index}_{kind}.mem" for kind in ("desc", "rows", "bias")}
    (memories.parent / files["rows"]).write_bytes(_row_table(stage))
    (memories.parent / files["bias"]).write_bytes(_bias_rows(stage))
    descriptors = [_descriptor(layer) for layer in stage.layers]
    (memories.parent / files["desc"]).write_bytes(hex_lines(pack_fields(_transpose(descriptors))))
    loop = stage.loop
    parameters = [
        ("B", stage.input.lanes), ("P", stage.pes), ("LAYERS", len(stage.layers)),
        ("IN_IDX_W", stage.input.index_bits), ("LOOP_IDX_W", loop.index_bits if loop else 1),
        ("OUT_IDX_W", _out_index_bits(stage)),
        ("ADDRESSES", stage.addresses), ("LOCAL_W", stage.local_bits), ("ROWS", stage.rows), ("START_W", stage.start_bits), ("CNT_W", stage.count_bits),
        ("W_BITS", stage.weight_bits), ("ACC_W", stage.acc_bits), ("BIAS_ROWS", stage.bias_rows),
        ("LOOP_DEPTH", loop.lane_depth if loop else 1), ("MASK_DEPTH", MASK_DEPTH),
        ("REQUEST_DEPTH", REQUEST_DEPTH), ("ACTIVATION_DEPTH", ACTIVATION_DEPTH), ("MAX_BURSTS", MAX_BURSTS),
        ("DENSE", int(stage.last)),
        ("DESC_FILE", f'"{files["desc"]}"'), ("ROWS_FILE", f'"{files["rows"]}"'),
        ("BIAS_FILE", f'"{files["bias"]}"'),
        ("DESC_STYLE", style(stage.memory("descriptors"))), ("ROWS_STYLE", style(stage.memory("row table"))),
        ("BIAS_STYLE", style(stage.memory("bias"))), ("ACC_STYLE", style(stage.memory("accumulators"))),
        ("REQUEST_STYLE", style(stage.memory("row requests"))),
        ("ACTIVATION_STYLE", style(stage.memory("waiting activations"))),
        *_loop_styles(stage),
    ]  # fmt: skip
    names = ", ".join(layer.name for layer in stage.layers)
    description = f"sequential, layers {names}, {stage.pes} PE(s), weights from gmem{stage.port}"
    port = plan.interface.ports[stage.port]
    return _stage_context(stage, "fg_seq_stage", description, parameters, port.data_bits)


def _loop_styles(stage: StagePlan) -> list[tuple[str, str]]:
    """The loop-back channel's kinds; a single-layer stage has none (its defaults are unused)."""
    if stage.loop is None:
        return []
    return [("LOOP_STYLE", style(stage.memory("loop-back lanes"))),
            ("LOOP_MASK_STYLE", style(stage.memory("loop-back mask")))]  # fmt: skip


def _row_table(stage: StagePlan) -> bytes:
    """One word per input row of the stage's layers: {start beat, beats}."""
    return hex_lines(pack_fields([(stage.row_beats, stage.count_bits), (stage.row_start, stage.start_bits)]))


def _entries(layer: LayerPlan) -> bytes:
    """One word per beat: the PEs' slot words side by side, PE 0 in the lowest bits."""
    words = layer.rom_words
    width = layer.shape.slot.width
    return hex_lines(pack_fields([(words[:, p], width) for p in range(words.shape[1])]))


def _bias_rows(stage: StagePlan) -> bytes:
    """One word per local address a: the biases of outputs a*P .. a*P+P-1 (0 past the last)."""
    bias = stage.bias
    return hex_lines(pack_fields([(bias[:, p], stage.acc_bits) for p in range(stage.pes)]))


def _descriptor(layer: LayerPlan) -> list[int]:
    """The sequential stage's per-layer parameters, eight 32-bit fields (see fg_seq_stage.v)."""
    return [
        layer.shape.n_out, layer.shape.addresses, layer.row_offset, layer.bias_offset,
        layer.offchip_base & 0xFFFFFFFF, layer.offchip_base >> 32, layer.shift,
        (layer.lo & 0xFFFF) | ((layer.hi & 0xFFFF) << 16),
    ]  # fmt: skip


def _transpose(descriptors: list[list[int]]) -> list[tuple[np.ndarray, int]]:
    return [(np.array(column, dtype=np.int64), 32) for column in zip(*descriptors)]
