"""Attach a schedule to a quantized model, after checking the engine can build it."""

from __future__ import annotations

from dataclasses import replace

from ..engine.geometry import OFFCHIP_MAX_ADDRESSES, UNITS
from ..errors import FpgagenError
from ..ir import BRAM, DATAFLOW, OFFCHIP, SEQUENTIAL, LayerSchedule, Model, Schedule

DATAFLOW_PES = (1, 2, 4, 8, 16, 32, 64)
SEQUENTIAL_PES = (1, 2, 4, 8, 16)  # AXI data width 32 * P bits, at most 512
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
                layers[index], schedule=LayerSchedule(stage.mode, stage.pes, number, stage.weight_memory, stage.units)
            )
    return replace(model, layers=tuple(layers), schedule=schedule)


def _check_stage(model: Model, number: int, stage) -> None:
    where = f"stage {number} (layers {', '.join(model.layers[i].name for i in stage.layers)})"
    if stage.mode == DATAFLOW:
        if len(stage.layers) != 1:
            raise FpgagenError(f"{where}: a dataflow stage runs exactly one layer")
        if stage.pes not in DATAFLOW_PES:
            raise FpgagenError(f"{where}: {stage.pes} PEs; a dataflow stage takes one of {DATAFLOW_PES}")
        if stage.units not in UNITS or stage.units > stage.pes:
            raise FpgagenError(
                f"{where}: {stage.units} issue units; a dataflow stage takes one of {UNITS}, at most its PEs"
            )
        if stage.weight_memory != BRAM:
            raise FpgagenError(
                f"{where}: dataflow weights live in {BRAM}, not {stage.weight_memory!r}: a weight ROM needs "
                "contents initialized from the bitstream, and UltraRAM cannot hold initialized ROM contents "
                "on UltraScale+ parts"
            )
    elif stage.mode == SEQUENTIAL:
        if stage.pes not in SEQUENTIAL_PES:
            raise FpgagenError(f"{where}: {stage.pes} PEs; a sequential stage takes one of {SEQUENTIAL_PES}")
        if stage.weight_memory != OFFCHIP:
            raise FpgagenError(f"{where}: sequential weights live off chip")
        if stage.units != 1:
            raise FpgagenError(f"{where}: a sequential stage has one issue unit, not {stage.units}")
        for index in stage.layers:
            layer = model.layers[index]
            if -(-layer.out_features // stage.pes) > OFFCHIP_MAX_ADDRESSES:
                raise FpgagenError(
                    f"{where}: layer {layer.name} has {layer.out_features} outputs, more than "
                    f"{OFFCHIP_MAX_ADDRESSES} per lane, which the off-chip weight format cannot address"
                )
    else:
        raise FpgagenError(f"{where}: unknown mode {stage.mode!r}")
