"""Attach a schedule to a quantized model, after checking the engine can build it."""

from __future__ import annotations

from dataclasses import replace

from ..engine.geometry import (
    MAX_OUT_LANES,
    MAX_PORT_BITS,
    MAX_STAGE_PES,
    MAX_WORD_VALUES,
    OFFCHIP_SLOT_WIDTHS,
    STRIPES,
    UNITS,
    SequentialShape,
    drain_lane_choices,
    load_port_bits,
)
from ..engine.plan import layer_shape
from ..errors import FpgagenError
from ..ir import BRAM, DATAFLOW, OFFCHIP, SEQUENTIAL, URAM, LayerSchedule, Model, Schedule

# 1, 2 and the multiples of 4 up to 64: every K of UNITS divides P, so a drain's groups are
# whole. Between the powers of two, so that a design whose every stage cannot take 64 PEs need not
# fall to 32: Graph Challenge 1024 x 120 on the U280 puts most stages at 36 and 40 PEs (interval
# 553.7 cycles; 609.9 with multiples of 8 only, its stages at 32 and 40). And 128, for a layer
# whose rows are long enough to keep 64 PEs the bottleneck (the FFN of bench_schedule: a 1024 x
# 2048 layer at 10% density, 205 nonzeros a row); not for the model's last layer (MAX_OUT_LANES),
# nor private with more than two units (MAX_STAGE_PES).
DATAFLOW_PES = (1, 2, *range(4, 65, 4), 128)
# AXI data width: P slots of 8, 16 or 32 bits, at most 512. Not 64: a drained word's count of its
# P outputs' nonzeros would take 7 LUT levels (bench_timing, narrow_w4a8 at P=64).
SEQUENTIAL_PES = (1, 2, 4, 8, 16, 32)
# What `--pes` may force on every stage, the model's last too: no P beyond MAX_OUT_LANES.
FORCED_PES = tuple(p for p in sorted({*DATAFLOW_PES, *SEQUENTIAL_PES}) if p <= MAX_OUT_LANES)
IN_LANES = (1, 2, 4, 8, 16, 32)  # AXI4-Stream data width 16 * K bits, at most 512


def apply_schedule(model: Model, schedule: Schedule) -> Model:
    """`model` with `schedule` and every layer's share of it; refuses what the engine cannot build."""
    if not model.quantized:
        raise ValueError("schedule a quantized model")
    if schedule.in_lanes not in IN_LANES:
        raise FpgagenError(f"input lanes {schedule.in_lanes} not in {IN_LANES}")
    covered = [index for stage in schedule.stages for index in stage.layers]
    if covered != list(range(len(model.layers))):
        raise FpgagenError(f"the stages cover layers {covered}, not each of 0..{len(model.layers) - 1} once in order")
    layers = list(model.layers)
    for number, stage in enumerate(schedule.stages):
        _check_stage(model, number, stage)
        for index in stage.layers:
            layers[index] = replace(
                layers[index],
                schedule=LayerSchedule(
                    stage.mode, stage.pes, number, stage.weight_memory, stage.units, stage.private, stage.drain_lanes
                ),
            )
    return replace(model, layers=tuple(layers), schedule=schedule)


def _check_stage(model: Model, number: int, stage) -> None:
    where = f"stage {number} (layers {', '.join(model.layers[i].name for i in stage.layers)})"
    if stage.mode == DATAFLOW:
        if len(stage.layers) != 1:
            raise FpgagenError(f"{where}: a dataflow stage runs exactly one layer")
        if stage.pes not in DATAFLOW_PES:
            raise FpgagenError(f"{where}: {stage.pes} PEs; a dataflow stage takes one of {DATAFLOW_PES}")
        if stage.channels != 1:
            raise FpgagenError(f"{where}: a dataflow stage reads no memory channel of its own, not {stage.channels}")
        if stage.units not in UNITS or stage.units > stage.pes:
            raise FpgagenError(
                f"{where}: {stage.units} issue units; a dataflow stage takes one of {UNITS}, at most its PEs"
            )
        if stage.layers[0] == len(model.layers) - 1 and stage.pes > MAX_OUT_LANES:
            raise FpgagenError(
                f"{where}: {stage.pes} PEs; the model's last stage drains dense beats of its P values, "
                f"at most {MAX_OUT_LANES}"
            )
        if stage.private and stage.units * stage.pes > MAX_STAGE_PES:
            raise FpgagenError(
                f"{where}: {stage.units} units of {stage.pes} private PEs each; a stage has at most {MAX_STAGE_PES} PEs"
            )
        shape = layer_shape(model.layers[stage.layers[0]], stage.pes)
        if stage.private and shape.stacked:
            raise FpgagenError(
                f"{where}: private PEs take an entry every cycle, but this layer's banks are stacked in one "
                "block RAM, whose port the drain shares: give the stage more PEs or shared ones"
            )
        choices = drain_lane_choices(shape, stage.units, stage.layers[0] == len(model.layers) - 1)
        lanes = stage.pes if stage.drain_lanes is None else stage.drain_lanes
        if not choices:
            raise FpgagenError(
                f"{where}: its banks are stacked, so its drain takes all {stage.pes} lanes at once, and a word of "
                f"P / K = {stage.pes // stage.units} values is more than the {MAX_WORD_VALUES} a drain counts in a "
                f"cycle: give it at least {-(-stage.pes // MAX_WORD_VALUES)} units, or more PEs"
            )
        if lanes not in choices:
            raise FpgagenError(
                f"{where}: a drain of {lanes} lanes; this stage's takes one of {choices} (P / 2^k, a multiple of "
                f"its units, at most {MAX_WORD_VALUES} values a unit's word; all P for the model's last layer, whose "
                "beats are P wide, and for stacked banks)"
            )
        if stage.weight_memory not in (BRAM, URAM):
            raise FpgagenError(
                f"{where}: dataflow weights live in a ROM ({BRAM}) or in UltraRAM that the load phase fills "
                f"({URAM}), not {stage.weight_memory!r}"
            )
        if stage.weight_memory == URAM:
            shape = layer_shape(model.layers[stage.layers[0]], stage.pes)
            if load_port_bits(shape.row_bits) > MAX_PORT_BITS:
                raise FpgagenError(
                    f"{where}: a row of {stage.pes} {shape.slot.width}-bit slots is wider than the "
                    f"{MAX_PORT_BITS}-bit port that loads weights into UltraRAM: keep them in {BRAM} or give "
                    "the stage fewer PEs"
                )
    elif stage.mode == SEQUENTIAL:
        if stage.pes not in SEQUENTIAL_PES:
            raise FpgagenError(f"{where}: {stage.pes} PEs; a sequential stage takes one of {SEQUENTIAL_PES}")
        if stage.weight_memory != OFFCHIP:
            raise FpgagenError(f"{where}: sequential weights live off chip")
        if stage.units != 1:
            raise FpgagenError(f"{where}: a sequential stage has one issue unit, not {stage.units}")
        if stage.private:
            raise FpgagenError(f"{where}: a sequential stage's PEs are fed by its one memory port: none is private")
        if stage.drain_lanes not in (None, stage.pes):
            raise FpgagenError(f"{where}: a sequential stage's drain takes all {stage.pes} lanes at once")
        if stage.channels not in STRIPES or stage.channels > stage.pes:
            raise FpgagenError(
                f"{where}: striped over {stage.channels} memory channels; a sequential stage takes one of "
                f"{STRIPES}, at most its PEs"
            )
        layers = [layer_shape(model.layers[index], stage.pes) for index in stage.layers]
        shape = SequentialShape.of(stage.pes, layers, stage.channels)
        if shape.slot.width > OFFCHIP_SLOT_WIDTHS[-1]:
            raise FpgagenError(
                f"{where}: {shape.addresses} outputs per lane and {shape.weight_bits}-bit weights need "
                f"{1 + shape.local_bits + shape.weight_bits}-bit off-chip slots, more than "
                f"{OFFCHIP_SLOT_WIDTHS[-1]}: give the stage more PEs"
            )
        if 8 * shape.port_bytes > MAX_PORT_BITS:
            raise FpgagenError(
                f"{where}: {stage.pes} PEs of {shape.slot.width}-bit off-chip slots over {stage.channels} "
                f"channel(s) make a {8 * shape.port_bytes}-bit memory port, more than {MAX_PORT_BITS}: give "
                "the stage fewer PEs or more channels"
            )
    else:
        raise FpgagenError(f"{where}: unknown mode {stage.mode!r}")
