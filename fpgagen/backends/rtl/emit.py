"""The RTL back end: the engine's Verilog library, a generated top level and its memory files.

Python decides every parameter (from the engine plan); the top-level template only wires the
library blocks (`templates/rtl/lib/`) together, and the weights go to `$readmemh` files.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jinja2
import numpy as np

from ... import __version__
from ...ir import DATAFLOW
from ..engine_plan import MASK_DEPTH, EnginePlan, LayerPlan, StagePlan, bits_for, plan_engine
from ..memfile import hex_lines, pack_fields

LIBRARY = (
    "fg_fifo.v", "fg_rom.v", "fg_ram.v", "fg_lane_reader.v", "fg_pe_array.v", "fg_df_stage.v",
    "fg_seq_stage.v", "fg_axi_reader.v", "fg_input_reader.v", "fg_control.v", "fg_axilite_ctrl.v",
    "fg_lane_writer.v",
)  # fmt: skip
CONTROL_FIRST_ARGUMENT = 0x10  # Vitis HLS: 0x00-0x0c hold control, interrupt enable and status


@dataclass(frozen=True)
class ControlMap:
    """The AXI4-Lite argument registers, laid out as Vitis HLS lays out the same C arguments:
    each 64-bit pointer takes 12 bytes (low, high, reserved), each 32-bit scalar 8."""

    words: tuple[int, ...]  # byte address of each 32-bit argument word
    pointer_words: dict[int, int]  # port k -> index of its low word (the high word follows)
    batch_word: int

    @classmethod
    def for_ports(cls, ports: int) -> ControlMap:
        words, pointer_words, offset = [], {}, CONTROL_FIRST_ARGUMENT
        for port in range(ports):
            pointer_words[port] = len(words)
            words += [offset, offset + 4]
            offset += 12
        batch_word = len(words)
        words.append(offset)
        return cls(tuple(words), pointer_words, batch_word)

    @property
    def addr_bits(self) -> int:
        return bits_for(max(self.words) + 4)

    @property
    def packed_addresses(self) -> str:
        """ARG_ADDRS: 16 bits per word, word 0 in the least significant bits."""
        return f"{16 * len(self.words)}'h" + "".join(f"{address:04x}" for address in reversed(self.words))

    def register(self, name: str) -> int:
        if name == "batch":
            return self.words[self.batch_word]
        return self.words[self.pointer_words[int(name.removeprefix("weights"))]]


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resources.files("fpgagen.templates") / "rtl")),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def emit_rtl(model, folder: Path, plan: EnginePlan | None = None) -> None:
    """Write the Verilog of a quantized, scheduled model into `folder` (OUTDIR/rtl)."""
    plan = plan or plan_engine(model)
    folder.mkdir(parents=True, exist_ok=True)
    memories = folder / "mem"
    memories.mkdir(exist_ok=True)
    library = resources.files("fpgagen.templates") / "rtl" / "lib"
    for name in LIBRARY:
        with resources.as_file(library / name) as source:
            shutil.copyfile(source, folder / name)
    stages = []
    for stage in plan.stages:
        if stage.mode == DATAFLOW:
            stages.append(_dataflow_stage(plan, stage, memories))
        else:
            stages.append(_sequential_stage(plan, stage, memories))
    control = ControlMap.for_ports(len(plan.sequential))
    context = {
        "version": __version__,
        "model": plan.model.name,
        "top": plan.top,
        "core": f"{plan.model.name}_core",
        "in_lanes": plan.in_lanes,
        "out_lanes": plan.out_lanes,
        "n_in": plan.model.in_features,
        "index_bits": plan.index_bits,
        "item_bits": 17 + plan.index_bits,
        "channels": plan.channels,
        "mask_depth": MASK_DEPTH,
        "stages": stages,
        "sequential": [stage for stage in stages if stage["port"] is not None],
        "control": control,
    }
    environment = _environment()
    for template, module in (("core.v.j2", context["core"]), ("top.v.j2", plan.top)):
        (folder / f"{module}.v").write_text(environment.get_template(template).render(context))


def _stage_context(stage: StagePlan, module: str, description: str, parameters: list) -> dict:
    return {
        "index": stage.index,
        "mode": stage.mode,
        "pes": stage.pes,
        "port": stage.port,
        "last": stage.last,
        "layers": stage.layers,
        "module": module,
        "description": description,
        "parameters": parameters,
    }


def _dataflow_stage(plan: EnginePlan, stage: StagePlan, memories: Path) -> dict:
    layer = stage.layers[0]
    numerics = layer.layer.numerics
    files = {kind: f"mem/s{stage.index}_{kind}.mem" for kind in ("rows", "entries", "bias")}
    (memories.parent / files["rows"]).write_bytes(_row_table(layer, stage.start_bits, stage.count_bits))
    (memories.parent / files["entries"]).write_bytes(_entries(layer, stage.weight_bits))
    (memories.parent / files["bias"]).write_bytes(_bias_rows(layer, stage.pes, stage.acc_bits))
    parameters = [
        ("B", stage.in_lanes), ("P", stage.pes), ("IDX_W", plan.index_bits),
        ("N_IN", layer.layer.in_features), ("N_OUT", layer.layer.out_features), ("BEATS", max(1, layer.beats)),
        ("START_W", stage.start_bits), ("CNT_W", stage.count_bits), ("W_BITS", stage.weight_bits),
        ("ACC_W", stage.acc_bits), ("SHIFT", numerics.shift), ("LO", numerics.lo_q), ("HI", numerics.hi_q),
        ("DENSE", int(stage.last)),
        ("ROWS_FILE", f'"{files["rows"]}"'), ("ENTRIES_FILE", f'"{files["entries"]}"'),
        ("BIAS_FILE", f'"{files["bias"]}"'),
    ]  # fmt: skip
    description = f"dataflow, layer {layer.layer.name}, {stage.pes} PE(s), weights on chip"
    return _stage_context(stage, "fg_df_stage", description, parameters)


def _sequential_stage(plan: EnginePlan, stage: StagePlan, memories: Path) -> dict:
    files = {kind: f"mem/s{stage.index}_{kind}.mem" for kind in ("desc", "rows", "bias")}
    row_tables, bias_rows, descriptors = [], [], []
    row_base = bias_base = 0
    for layer in stage.layers:
        row_tables.append(_row_table(layer, stage.start_bits, stage.count_bits))
        bias_rows.append(_bias_rows(layer, stage.pes, stage.acc_bits))
        descriptors.append(_descriptor(layer, row_base, bias_base))
        row_base += layer.layer.in_features
        bias_base += layer.depth
    (memories.parent / files["rows"]).write_bytes(b"".join(row_tables))
    (memories.parent / files["bias"]).write_bytes(b"".join(bias_rows))
    (memories.parent / files["desc"]).write_bytes(hex_lines(pack_fields(_transpose(descriptors))))
    parameters = [
        ("B", stage.in_lanes), ("P", stage.pes), ("LAYERS", len(stage.layers)), ("IDX_W", plan.index_bits),
        ("DEPTH", stage.depth), ("ROWS", row_base), ("START_W", stage.start_bits), ("CNT_W", stage.count_bits),
        ("W_BITS", stage.weight_bits), ("ACC_W", stage.acc_bits), ("BIAS_ROWS", bias_base),
        ("LOOP_DEPTH", stage.loop_depth), ("DENSE", int(stage.last)),
        ("DESC_FILE", f'"{files["desc"]}"'), ("ROWS_FILE", f'"{files["rows"]}"'),
        ("BIAS_FILE", f'"{files["bias"]}"'),
    ]  # fmt: skip
    names = ", ".join(layer.layer.name for layer in stage.layers)
    description = f"sequential, layers {names}, {stage.pes} PE(s), weights from gmem{stage.port}"
    return _stage_context(stage, "fg_seq_stage", description, parameters)


def _row_table(layer: LayerPlan, start_bits: int, count_bits: int) -> bytes:
    """One word per input row: {start beat, beats}."""
    layout = layer.layout
    return hex_lines(pack_fields([(layout.row_beats, count_bits), (layout.row_start, start_bits)]))


def _entries(layer: LayerPlan, weight_bits: int) -> bytes:
    """One word per beat: for each lane (lane 0 lowest) {valid, local, weight}."""
    layout = layer.layout
    if layout.beats == 0:  # a layer without weights still gets a (never read) one-word ROM
        return b"0\n"
    local_bits = bits_for(layer.depth - 1)
    bits = pack_fields(
        [
            (layout.weight.reshape(-1), weight_bits),
            (layout.local.reshape(-1), local_bits),
            (layout.valid.reshape(-1), 1),
        ]
    )
    return hex_lines(bits.reshape(layout.beats, -1))


def _bias_rows(layer: LayerPlan, pes: int, acc_bits: int) -> bytes:
    """One word per local address a: the biases of outputs a*P .. a*P+P-1 (0 past the last)."""
    bias = np.zeros(layer.depth * pes, dtype=np.int64)
    bias[: layer.layer.out_features] = layer.layer.numerics.bias_q
    return hex_lines(pack_fields([(bias, acc_bits)]).reshape(layer.depth, -1))


def _descriptor(layer: LayerPlan, row_base: int, bias_base: int) -> list[int]:
    """The sequential stage's per-layer parameters, eight 32-bit fields (see fg_seq_stage.v)."""
    numerics = layer.layer.numerics
    return [
        layer.layer.out_features, layer.depth, row_base, bias_base,
        layer.dram_base & 0xFFFFFFFF, layer.dram_base >> 32, numerics.shift,
        (numerics.lo_q & 0xFFFF) | ((numerics.hi_q & 0xFFFF) << 16),
    ]  # fmt: skip


def _transpose(descriptors: list[list[int]]) -> list[tuple[np.ndarray, int]]:
    return [(np.array(column, dtype=np.int64), 32) for column in zip(*descriptors)]
