"""The engine's interface: its streams, its AXI4 masters and its AXI4-Lite control map.

The HLS top function and the RTL top module have the same ports and the same register map (the
one Vitis HLS generates for the function's arguments), so one testbench drives either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..schedule.boards import Board
from .geometry import AXI_PAGE, MAX_BURST_BEATS, MEMORY_LATENCY, VALUE_BITS, bits_for, load_port_bits

if TYPE_CHECKING:
    from .plan import StagePlan

CONTROL_FIRST_ARGUMENT = 0x10  # Vitis HLS: 0x00-0x0c hold control, interrupt enable and status
POINTER_BYTES = 12  # a 64-bit pointer argument: low word, high word, a reserved word
SCALAR_BYTES = 8  # a 32-bit scalar argument: its word and a reserved one


@dataclass(frozen=True)
class WeightPort:
    """The AXI4 master `weights<k>` (bundle gmem<k>) of sequential stage `stage` (its channel
    `channel`), or (`stage` None, the last port) the load port of the dataflow stages whose weights
    are in UltraRAM."""

    port: int  # k
    stage: int | None
    channel: int  # which share of the stage's beats it carries: PEs channel * P / C .. (0: the load port)
    data_bits: int  # one beat of the channel's P / C off-chip slots
    image: str  # the file holding its weight image: weights<k>.bin
    image_beats: int  # beats of the image (co-simulation's m_axi depth: at least 1)
    load_beats: int  # the beats the load phase reads at each batch's start: row tables and biases
    max_burst: int  # the longest burst a row asks for
    bytes_per_cycle: float  # what the board's memory channel delivers per design clock
    memory_latency: int  # cycles from a burst's address to its first data (the models' assumption)

    @property
    def name(self) -> str:
        return f"weights{self.port}"

    @property
    def bundle(self) -> str:
        return f"gmem{self.port}"


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
            offset += POINTER_BYTES
        batch_word = len(words)
        words.append(offset)
        return cls(tuple(words), pointer_words, batch_word)

    @property
    def addr_bits(self) -> int:
        return bits_for(max(self.words) + 4)

    def register(self, name: str) -> int:
        """The byte address of argument `name`: `batch` or `weights<k>` (its low word)."""
        if name == "batch":
            return self.words[self.batch_word]
        return self.words[self.pointer_words[int(name.removeprefix("weights"))]]

    def registers(self) -> dict[str, int]:
        names = ["batch", *(f"weights{port}" for port in self.pointer_words)]
        return {name: self.register(name) for name in names}


@dataclass(frozen=True)
class Interface:
    in_lanes: int  # 16-bit values per AXI4-Stream input beat
    out_lanes: int  # 16-bit values per output beat
    ports: tuple[WeightPort, ...]
    control: ControlMap

    @property
    def load_port(self) -> WeightPort | None:
        """The port that loads the dataflow stages' UltraRAM, if any stage has its weights there."""
        return next((port for port in self.ports if port.stage is None), None)

    @property
    def in_bits(self) -> int:
        return VALUE_BITS * self.in_lanes

    @property
    def out_bits(self) -> int:
        return VALUE_BITS * self.out_lanes


def plan_interface(stages: Sequence[StagePlan], in_lanes: int, board: Board) -> Interface:
    ports = tuple(
        WeightPort(
            port=port,
            stage=stage.index,
            channel=channel,
            data_bits=8 * stage.sequential_shape.port_bytes,
            image=f"weights{port}.bin",
            image_beats=stage.image_beats,
            load_beats=stage.sequential_shape.load_beats,
            max_burst=stage.max_burst,
            bytes_per_cycle=board.bytes_per_cycle,
            memory_latency=MEMORY_LATENCY,
        )
        for stage in stages
        for channel, port in enumerate(stage.ports)
    )
    loaded = [stage for stage in stages if stage.loaded]
    if loaded:
        data_bits = load_port_bits(max(stage.row_bits for stage in loaded))
        beats = sum(stage.layers[0].shape.rom_beats for stage in loaded)
        ports += (
            WeightPort(
                port=len(ports),
                stage=None,
                channel=0,
                data_bits=data_bits,
                image=f"weights{len(ports)}.bin",
                image_beats=beats,
                load_beats=beats,
                max_burst=min(MAX_BURST_BEATS, AXI_PAGE * 8 // data_bits),
                bytes_per_cycle=board.bytes_per_cycle,
                memory_latency=MEMORY_LATENCY,
            ),
        )
    return Interface(in_lanes, stages[-1].pes, ports, ControlMap.for_ports(len(ports)))
