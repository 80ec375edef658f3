"""Lowering of a scheduled model to the engine's concrete parameters (docs/engine.md).

Both back ends, the manifest and the testbenches read this one plan: widths, depths, lane counts,
the weight layout of every layer, channel FIFO depths and the off-chip images of sequential
stages. Everything here follows from the schedule; nothing is decided here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..ir import DATAFLOW, Layer, Model, Stage
from ..layout import AXI_4K, OFFCHIP_ENTRY_BYTES, LaneLayout, lane_layout


def bits_for(count: int) -> int:
    """Bits of an unsigned counter that holds 0..count (at least 1)."""
    return max(1, int(count).bit_length())


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True, eq=False)
class LayerPlan:
    index: int
    layer: Layer
    layout: LaneLayout
    acc_bits: int  # register width: the layer's exact bound, at least one bit above a product
    dram_base: int = 0  # byte offset in its stage's off-chip image (sequential stages)

    @property
    def depth(self) -> int:
        return self.layout.local_depth

    @property
    def beats(self) -> int:
        return self.layout.beats

    @property
    def max_row_beats(self) -> int:
        return int(self.layout.row_beats.max(initial=0))


@dataclass(frozen=True, eq=False)
class StagePlan:
    index: int
    stage: Stage
    in_lanes: int
    layers: tuple[LayerPlan, ...]
    port: int | None  # the k of weights<k> / gmem<k> for a sequential stage
    last: bool  # the model's last stage: drains dense beats to y_out

    @property
    def mode(self) -> str:
        return self.stage.mode

    @property
    def pes(self) -> int:
        return self.stage.pes

    @property
    def depth(self) -> int:
        return max(layer.depth for layer in self.layers)

    @property
    def acc_bits(self) -> int:
        return max(layer.acc_bits for layer in self.layers)

    @property
    def weight_bits(self) -> int:
        """Weight field of the stage's entries: its widest layer's (formats may differ per layer)."""
        return max(layer.layer.numerics.weight_format.bits for layer in self.layers)

    @property
    def start_bits(self) -> int:
        return max(bits_for(layer.beats) for layer in self.layers)

    @property
    def count_bits(self) -> int:
        return max(bits_for(layer.max_row_beats) for layer in self.layers)

    @property
    def loop_depth(self) -> int:
        """Loop-back lane FIFO depth of a sequential stage: one whole vector per lane, plus one."""
        widest = max((layer.layer.out_features for layer in self.layers[:-1]), default=1)
        return ceil_div(widest, self.pes) + 1

    @cached_property
    def offchip_image(self) -> bytes:
        """The weight image of a sequential stage: every layer's beats at its 4 KB-aligned base."""
        size = max((plan.dram_base + plan.beats * self.pes * OFFCHIP_ENTRY_BYTES for plan in self.layers), default=0)
        image = np.zeros(max(size, 1) // OFFCHIP_ENTRY_BYTES, dtype="<u4")
        for plan in self.layers:
            words = plan.layout.offchip_words().reshape(-1)
            start = plan.dram_base // OFFCHIP_ENTRY_BYTES
            image[start : start + words.size] = words
        return image.tobytes()


MASK_DEPTH = 4  # vectors a channel's mask FIFO holds (docs/engine.md)


@dataclass(frozen=True, eq=False)
class Channel:
    """The lane FIFOs (and mask FIFO) in front of a stage."""

    lanes: int
    length: int  # the vector length it carries

    @property
    def depth(self) -> int:
        """Deadlock-free depth: a producer writes all lanes in step while the consumer reads one."""
        return ceil_div(self.length, self.lanes) + 1


@dataclass(frozen=True, eq=False)
class EnginePlan:
    model: Model
    in_lanes: int
    index_bits: int
    stages: tuple[StagePlan, ...]
    channels: tuple[Channel, ...]  # channels[s] feeds stage s

    @property
    def top(self) -> str:
        return f"{self.model.name}_top"

    @property
    def out_lanes(self) -> int:
        return self.stages[-1].pes

    @property
    def sequential(self) -> list[StagePlan]:
        return [stage for stage in self.stages if stage.port is not None]


def plan_engine(model: Model) -> EnginePlan:
    """The engine parameters of a quantized, scheduled model."""
    schedule = model.schedule
    if schedule is None or not model.quantized:
        raise ValueError("plan a quantized, scheduled model")
    widest = max([model.in_features] + [layer.out_features for layer in model.layers])
    stages, channels = [], []
    in_lanes = schedule.in_lanes
    vector = model.in_features
    port = 0
    for number, stage in enumerate(schedule.stages):
        channels.append(Channel(in_lanes, vector))
        layer_plans, base = [], 0
        for index in stage.layers:
            layer = model.layers[index]
            layout = lane_layout(layer.numerics.weights_q, stage.pes)
            product_bits = 16 + layer.numerics.weight_format.bits
            acc_bits = max(layer.numerics.acc_bits, product_bits + 1)
            layer_plans.append(LayerPlan(index, layer, layout, acc_bits, base))
            base += ceil_div(layout.beats * stage.pes * OFFCHIP_ENTRY_BYTES, AXI_4K) * AXI_4K
        sequential = stage.mode != DATAFLOW
        stages.append(
            StagePlan(
                number,
                stage,
                in_lanes,
                tuple(layer_plans),
                port if sequential else None,
                number == len(schedule.stages) - 1,
            )
        )
        port += sequential
        in_lanes = stage.pes
        vector = model.layers[stage.layers[-1]].out_features
    return EnginePlan(model, schedule.in_lanes, bits_for(widest - 1), tuple(stages), tuple(channels))
