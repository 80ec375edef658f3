"""The cost model: cycles and resources of the engine in docs/engine.md, per layer, stage and design.

Formulas only; the search over schedules is in scheduler.py. docs/cost-model.md states every
formula used here, with the constants and where they come from. The parts it puts together have
modules of their own: a layer's cycles (cycles.py), what memories and logic cost (resources.py),
how stages pace each other (pacing.py) and the figures it hands on (estimates.py).

Cycles are per input vector: an input activation costs its row's work only when it is nonzero
(the `Activity`). A layer's placement on P PEs is the one the relabelling pass will give it
(fpgagen.engine.relabel), so its cycles depend on its own weights, P and K only, and every stage
the scheduler can choose has a fixed interval, latency and resource use: see `StageCost`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from ..engine.encoding import encoding_of
from ..engine.geometry import (
    MAX_BURSTS,
    MAX_STAGE_PES,
    MEMORY_LATENCY,
    OFFCHIP_SLOT_WIDTHS,
    STRIPES,
    DenseOutput,
    LayerShape,
    LogicShape,
    Output,
    SequentialShape,
    accumulator_bits,
    bits_for,
    ceil_div,
    dataflow_memories,
    drain_lane_choices,
    in_lanes,
    load_port_bits,
    loadable,
    offchip_slot,
    reader_memories,
    sequential_memories,
    stripable,
)
from ..engine.memory import (
    Memory,
)
from ..engine.plan import layer_shape, reader_channel, stage_is_quiet, stage_output, zero_without_input
from ..engine.relabel import rotation_levels
from ..errors import FpgagenError
from ..ir import BRAM, DATAFLOW, OFFCHIP, SEQUENTIAL, URAM, Layer, Model, Stage
from .activity import Activity
from .boards import Board
from .cycles import (
    COMPUTE_BOUND,
    INPUT_BOUND,
    L_DRAIN,
    L_DRAIN_MUX,
    L_EMPTY,
    L_HAND_OFF,
    L_LOOKUP,
    L_PASS,
    L_QUIET,
    L_READER,
    L_ROTATE,
    L_WORDS,
    MEMORY_BOUND,
    LayerCycles,
    adder_levels,
    compute_latency,
    sequential_latency,
    stage_holds,
)
from .estimates import DesignEstimate, LayerEstimate, ReaderCost, Roofline, StageCost, StageEstimate
from .pacing import (
    CHANNEL_EXTRA_ITEMS,
    DEEP_CHANNEL_AHEAD,
    SHALLOW_CHANNEL_AHEAD,
    ChainedStage,
    chained_interval,
    design_interval,
    handed_on,
    in_lockstep,
    word_fifo_ahead,
)
from .resources import (
    BRAM36_BITS,
    LUTRAM_DEPTH,
    READER_LOGIC,
    URAM_BITS,
    Resources,
    board_budget,
    engine_logic,
    least_pe_luts,
    total,
)
from .work import Placement, issue_cycles, pe_cycles, place, serializer_cycles

# The cost model's choice of drain lanes (CostModel.drain_lanes): the fewest whose stage holds each
# vector, on average, at most this much longer than with all P (the multiplexer's cycle, L_DRAIN_MUX,
# included).
DRAIN_LANE_SLACK = 0.005
# A private stage of K > 1 units keeps its PEs as busy as its rows fill their lanes (a row's beat
# goes to one unit's P PEs, whatever the others do), where shared PEs take the K units' entries
# through their FIFOs and stay busy when rows are short. The scheduler builds such a stage only
# where the rows, weighted by their activity, fill at least this share of the lanes' beats: the
# per-layer efficiency the engine is held to (issue 10; bench_rtl). Graph Challenge at P = 32 (one
# beat a row of 32 on 32 lanes, its last layer rotated: fpgagen.engine.relabel) fills them; P = 48
# or 64 (32 of the lanes) do not, nor unstructured layers at P >= 16.
PRIVATE_LANE_USE = 0.85


def _lanes(drain_lanes: int, pes: int) -> int | None:
    """Stage.drain_lanes for a drain of `drain_lanes` a cycle: None for all P."""
    return None if drain_lanes == pes else drain_lanes


class CostModel:
    """The cost of every stage the engine can build for `model` on `board` under `activity`.

    With `relabel` (by default, unless the model is relabelled already) every layer but the last
    is priced as the relabelling pass will place it on the P PEs of its stage (the scheduler's
    case); without, as it stands.
    """

    def __init__(self, model: Model, board: Board, activity: Activity, relabel: bool | None = None):
        if not model.quantized:
            raise FpgagenError(f"model {model.name} is not quantized; the cost model needs its integer weights")
        if len(activity.probabilities) != len(model.layers) or any(
            p.shape != (layer.in_features,) for p, layer in zip(activity.probabilities, model.layers)
        ):
            raise FpgagenError(f"the activity does not match the layers of model {model.name}")
        self.model = model
        self.board = board
        self.activity = activity
        self.relabel = not model.relabelled if relabel is None else relabel
        self._placements: dict[tuple[int, int], Placement] = {}
        self._shapes: dict[tuple[int, int], LayerShape] = {}
        self._cycles: dict[tuple[int, int, str, int, int, int, bool, int], LayerCycles] = {}
        self._items: dict[tuple[int, int, int, int], np.ndarray] = {}  # shared by a layer's modes, slots, channels
        self._quiet_shares: dict[tuple[int, int], np.ndarray | None] = {}  # shared by a layer's K, PEs' kinds, lanes
        self._empty: dict[int, np.ndarray | None] = {}
        self._issue: dict[tuple[int, int, int], np.ndarray] = {}  # shared by shared and private PEs
        self._pe_busy: dict[tuple[int, int], np.ndarray] = {}  # shared by a dataflow layer's K
        self.encodings = tuple(encoding_of(layer.numerics) for layer in model.layers)
        # the layers whose dataflow stages drain quiet vectors by their end words alone
        self.quiet = tuple(stage_is_quiet(layer, self.is_last(index)) for index, layer in enumerate(model.layers))
        # the layers whose dataflow stages let empty vectors pass their banks, the last among them
        self.passes_empty = tuple(zero_without_input(layer) for layer in model.layers)
        self.uram = board.has_free_uram  # loaded tables may go to UltraRAM

    @property
    def layers(self) -> tuple[Layer, ...]:
        return self.model.layers

    def is_last(self, index: int) -> bool:
        return index == len(self.layers) - 1

    def placement(self, index: int, pes: int) -> Placement:
        key = (index, pes)
        if key not in self._placements:
            last = self.is_last(index)  # the model's outputs keep their order, rotated at most
            self._placements[key] = place(self.layers[index].numerics.weights_q, pes, self.relabel and not last, last)
        return self._placements[key]

    def shape(self, index: int, pes: int) -> LayerShape:
        """Layer `index`'s sizes on P PEs (fpgagen.engine.geometry)."""
        key = (index, pes)
        if key not in self._shapes:
            placement = self.placement(index, pes)
            self._shapes[key] = layer_shape(
                self.layers[index], pes, placement.beats, self.encodings[index], rotation_levels(placement.rotations)
            )
        return self._shapes[key]

    # Cycles --------------------------------------------------------------------------------------

    def cycles(
        self,
        index: int,
        pes: int,
        mode: str,
        units: int = 1,
        slot_width: int | None = None,
        channels: int = 1,
        private: bool = False,
        drain_lanes: int | None = None,
    ) -> LayerCycles:
        """Layer `index` on P PEs and K issue units in `mode` (docs/cost-model.md, "Cycles"), each
        unit with P PEs of its own when `private`, a dataflow drain taking `drain_lanes` a cycle
        (None: P); a sequential layer's beats in off-chip slots of `slot_width` bits, its stage's (by
        default the layer's own, as in a stage of its own), striped over `channels` memory channels."""
        if mode == DATAFLOW:
            slot_width, channels = 0, 1
        elif slot_width is None:
            slot_width = SequentialShape.of(pes, [self.shape(index, pes)]).slot.width
        drain_lanes = drain_lanes or pes
        key = (index, pes, mode, units, slot_width, channels, private, drain_lanes)
        if key not in self._cycles:
            self._cycles[key] = self._layer_cycles(index, pes, mode, units, slot_width, channels, private, drain_lanes)
        return self._cycles[key]

    def _layer_cycles(
        self,
        index: int,
        pes: int,
        mode: str,
        units: int,
        slot_width: int,
        channels: int,
        private: bool,
        drain_lanes: int,
    ) -> LayerCycles:
        if mode == DATAFLOW:
            return self._dataflow_cycles(index, pes, units, private, drain_lanes)
        # a sequential layer: one activation a cycle looked up, one beat a cycle taken, the beats
        # brought over the memory port
        placement = self.placement(index, pes)
        inputs = self.activity.inputs(index)
        drain, _ = self._drain_length(index, pes, units, False, pes)
        items = self._items_per_vector(index, pes, units)
        output = self._outputs_after_drain(index, items)
        beats = inputs.rows @ placement.beats
        work = np.maximum(inputs.rows.sum(axis=1), beats)
        reads = inputs.rows @ (placement.beats > 0)
        memory = self.memory_cycles(beats, reads, slot_width // 8 * pes, channels)
        bound = MEMORY_BOUND if memory.mean() > work.mean() else COMPUTE_BOUND
        # a pass's first read waits MEMORY_LATENCY: its rows come from the pass before
        tails = np.where(reads > 0, sequential_latency(self.shape(index, pes).single_cycle), L_LOOKUP)
        compute = np.maximum(work, memory) + tails
        return LayerCycles(
            float(compute.mean()), drain, float(output.mean()), bound, compute, output, tails, items=items
        )

    def _dataflow_cycles(self, index: int, pes: int, units: int, private: bool, drain_lanes: int) -> LayerCycles:
        shape = self.shape(index, pes)
        drain, delay = self._drain_length(index, pes, units, private, drain_lanes)
        items = self._items_per_vector(index, pes, units, drain_lanes)
        output = self._outputs_after_drain(index, items) + delay
        if private:
            # a private PE takes at most an entry a beat of its own unit: only the units limit
            # (docs/engine.md, "Private PEs")
            compute = self._busiest_unit(index, pes, units) + compute_latency(shape.single_cycle)
        else:
            issue = self._busiest_unit(index, pes, units)
            pes_busy = self._busiest_pe(index, pes)
            if shape.stacked:
                # the drain of the vector before reads in slots of the MAC pipeline: a cycle an
                # address at every PE, and its outputs a cycle later (docs/engine.md, "Stacked banks")
                pes_busy, drain = pes_busy + shape.addresses, drain + 1
            compute = np.maximum(issue, pes_busy) + compute_latency(shape.single_cycle)
        drains = self._drains(index, pes, drain)
        return LayerCycles(
            float(compute.mean()),
            float(drains.mean()),
            float(output.mean()),
            COMPUTE_BOUND,
            compute,
            output,
            drains=drains,
            empty=self._empty_vectors(index),
            # the model's last layer writes an empty vector's beats, zeros, as it drains a bank
            empty_drain=drain if self.is_last(index) else L_EMPTY,
            items=items,
        )

    def _drain_length(self, index: int, pes: int, units: int, private: bool, drain_lanes: int) -> tuple[float, int]:
        """A drain's cycles (without stacked banks' cycle; a sequential pass's: all P lanes, shared
        PEs), and the cycles its outputs come later than all P lanes' unmultiplexed, a private
        stage's unadded sums would."""
        # a row a cycle, each local address of each group of D PEs, then the groups' multiplexer
        # (docs/engine.md, "Drain lanes") and a private stage's adder tree, a cycle a level
        delay = (L_DRAIN_MUX if drain_lanes < pes else 0) + (adder_levels(units) if private else 0)
        shape = self.shape(index, pes)
        rows = shape.drain_rows(drain_lanes)
        # the model's last layer writes dense beats, a cycle later through a rotator (fg_dense.v)
        tail = (L_ROTATE if shape.rotated else 0) if self.is_last(index) else L_WORDS
        return rows + L_DRAIN + tail + delay, delay

    def _drains(self, index: int, pes: int, drain: float) -> np.ndarray:
        """Per vector, a dataflow drain of `drain` cycles, or L_QUIET for a quiet vector: one whose
        active inputs have no beat at all, at a layer whose outputs are then all zero (docs/engine.md,
        "Quiet vectors"); measured vectors are quiet or not, one expected vector quiet with the
        probability that none of the inputs with beats is active."""
        quiet = self._quiet_share(index, pes)
        if quiet is None:
            return np.array([drain])
        return quiet * L_QUIET + (1.0 - quiet) * drain

    def _quiet_share(self, index: int, pes: int) -> np.ndarray | None:
        """Per vector, 1 where it is quiet at layer `index` on P PEs, else 0 (one expected vector: the
        probability); None where no vector is quiet (the layer's outputs are not all zero without
        input, or it is the model's last). Computed once for every K, kind of PE and drain lanes."""
        key = (index, pes)
        if key not in self._quiet_shares:
            self._quiet_shares[key] = None
            if self.quiet[index]:
                inputs = self.activity.inputs(index)
                has_beats = self.placement(index, pes).beats > 0
                if inputs.measured:
                    self._quiet_shares[key] = ((inputs.rows @ has_beats) == 0).astype(np.float64)
                else:
                    with np.errstate(divide="ignore"):  # an input that is always active: never quiet
                        self._quiet_shares[key] = np.exp(np.log1p(-inputs.rows[0][has_beats]).sum(keepdims=True))
        return self._quiet_shares[key]

    def _empty_vectors(self, index: int) -> np.ndarray | None:
        """Per measured vector, whether it brings layer `index` no activation, at a layer whose
        outputs are zero without input (docs/engine.md, "Empty vectors"); None for one expected
        vector, which is never empty: it holds every bank's stall a sometimes empty vector would
        spare."""
        if index not in self._empty:
            inputs = self.activity.inputs(index)
            self._empty[index] = (
                (inputs.rows.sum(axis=1) == 0)
                if self.passes_empty[index] and inputs.measured and len(inputs.rows) > 1
                else None
            )
        return self._empty[index]

    def memory_cycles(self, beats: np.ndarray, reads: np.ndarray, beat_bytes: int, channels: int = 1) -> np.ndarray:
        """Cycles to bring `beats` beats of `beat_bytes` bytes, striped over `channels` memory
        channels, in `reads` bursts (on each channel): at the channels' bandwidth, or as fast as
        MAX_BURSTS bursts in flight on each cover the memory's latency (Little's law), whichever is
        slower."""
        if self.board.channels == 0:
            return np.where(beats > 0, math.inf, 0.0)
        bandwidth = beats * (beat_bytes / (channels * self.board.bytes_per_cycle))
        return np.maximum(bandwidth, reads * (MEMORY_LATENCY / MAX_BURSTS))

    def lane_use(self, index: int, pes: int) -> float:
        """The share of P lanes that layer `index`'s rows fill, weighted by activity: useful MACs
        over P times the cycles a unit spends on the rows (a beat each, one for an empty row):
        what a private stage's PEs do a cycle."""
        placement = self.placement(index, pes)
        rows = self.activity.inputs(index).rows.sum(axis=0)
        cycles = float(rows @ placement.row_cycles)
        return float(rows @ placement.counts.sum(axis=1)) / (pes * cycles) if cycles else 1.0

    def private_fits(self, index: int, pes: int, units: int) -> bool:
        """Whether the scheduler may give layer `index` a private stage of P PEs a unit: its banks
        are its own (not stacked), and with K > 1 its PEs would be busy: its rows fill the lanes
        (PRIVATE_LANE_USE), and, the first layer, its units issue no faster than the input reader
        emits the activations (Graph Challenge 1024 x 8's first layer at P = 32, K = 4: busy 75.2
        cycles a vector in Verilator, 0.65 of its PEs' cycles useful, while its units issue in 58.8)."""
        if self.shape(index, pes).stacked or units * pes > MAX_STAGE_PES:
            return False
        if units == 1:
            return True
        fed = index > 0 or float(self._busiest_unit(index, pes, units).mean()) >= float(self.reader().held.mean())
        return fed and self.lane_use(index, pes) >= PRIVATE_LANE_USE

    def _busiest_unit(self, index: int, pes: int, units: int) -> np.ndarray:
        """The busiest issue unit's cycles per vector: computed once for shared and private PEs."""
        key = (index, pes, units)
        if key not in self._issue:
            self._issue[key] = issue_cycles(self.activity.inputs(index), self.placement(index, pes).row_cycles, units)
        return self._issue[key]

    def _busiest_pe(self, index: int, pes: int) -> np.ndarray:
        """The busiest PE's entries per vector: computed once for the K issue units priced with it."""
        key = (index, pes)
        if key not in self._pe_busy:
            self._pe_busy[key] = pe_cycles(self.activity.inputs(index), self.placement(index, pes).counts)
        return self._pe_busy[key]

    def _outputs_after_drain(self, index: int, items: np.ndarray) -> np.ndarray:
        """Per vector, from a drain's start to its serializers' last item: the drain's latency
        (its outputs' words) and the busiest serializer's `items`, one a cycle; 0 for the model's
        last layer, whose drain writes dense beats."""
        return items if self.is_last(index) else items + L_DRAIN + L_WORDS

    def _items_per_vector(self, index: int, pes: int, groups: int, drain_lanes: int | None = None) -> np.ndarray:
        """The items of the drain's busiest serializer per vector: each of `groups` emits the
        nonzero outputs of its drain_lanes / groups lanes of each drain row (None: P), one a cycle
        (0 for the model's last layer, which drains dense beats)."""
        if self.is_last(index):
            return np.zeros(1)
        lanes = drain_lanes or pes
        key = (index, pes, groups, lanes)
        if key not in self._items:
            placement = self.placement(index, pes)
            # output j on lane pe[j] at local address j // P: drain row address * P / D + pe[j] // D
            row = np.arange(self.layers[index].out_features) // pes * (pes // lanes) + placement.pe // lanes
            group = placement.pe % lanes // (lanes // groups)
            emitted = serializer_cycles(self.activity.inputs(index + 1), row, group, groups, empty_words=False)
            self._items[key] = emitted
        return self._items[key]

    def reader(self, lanes: int | None = None) -> ReaderCost:
        """The input reader: a beat of `lanes` values a cycle (by default the engine's choice), a
        gap after each vector, its groups serialized (fpgagen.engine.geometry.Groups)."""
        n_in = self.model.in_features
        lanes = in_lanes(n_in) if lanes is None else lanes
        channel = reader_channel(n_in, lanes)
        inputs = np.arange(n_in)
        emitted = serializer_cycles(
            self.activity.inputs(0), inputs // lanes, (inputs % lanes) // (lanes // channel.subs), channel.subs
        )
        held = np.maximum(ceil_div(n_in, lanes) + 1, emitted)
        interval = max(ceil_div(n_in, lanes) + 1, float(emitted.mean()))
        return ReaderCost(
            lanes, interval, interval + L_READER, total(reader_memories(channel, lanes)) + READER_LOGIC, held
        )

    def reader_memories(self, lanes: int | None = None, deep: str | None = None) -> list[Memory]:
        n_in = self.model.in_features
        lanes = in_lanes(n_in) if lanes is None else lanes
        return reader_memories(reader_channel(n_in, lanes, deep), lanes)

    # Dataflow stages ---------------------------------------------------------------------------

    def dataflow_memories(
        self,
        index: int,
        pes: int,
        units: int,
        loaded: bool = False,
        deep: str | None = None,
        private: bool = False,
        drain_lanes: int | None = None,
    ) -> list[Memory]:
        """Every memory of a dataflow stage running layer `index` on P PEs and K units (each with P
        PEs of its own when `private`), its weights `loaded` into UltraRAM or in a ROM, its drain
        taking `drain_lanes` a cycle (None: P), its output channel `deep` or shallow (fpgagen.engine)."""
        shape = self.shape(index, pes)
        output = stage_output(self.model, index, pes, units, deep)
        return dataflow_memories(
            shape, units, bits_for(shape.n_in - 1), output, loaded, private, drain_lanes, self.passes_empty[index]
        )

    def loadable(self, index: int, pes: int) -> bool:
        """Whether the board lets a dataflow stage of layer `index` on P PEs load its weights into
        UltraRAM (geometry.loadable)."""
        return self.uram and loadable(self.shape(index, pes))

    def load(self, index: int, pes: int) -> tuple[float, Resources]:
        """The load phase of a dataflow stage's weights: its cycles (a row a beat of the load's
        port, at most what the memory channel delivers) and the registers of its link in the load
        chain (a beat, its valid bit, the stage's row counter and its loaded flag)."""
        shape = self.shape(index, pes)
        beat_bits = load_port_bits(shape.row_bits)
        rate = min(1.0, self.board.bytes_per_cycle / (beat_bits // 8))
        return shape.rom_beats / rate, Resources(ff=beat_bits + 2 + bits_for(shape.rom_beats))

    def drain_lanes(self, index: int, pes: int, units: int, private: bool) -> int | None:
        """The fewest lanes a cycle (drain_lane_choices) with which layer `index`'s drain keeps the
        stage as fast as with all P, within DRAIN_LANE_SLACK per vector on average: each lane fewer
        is a requantizer fewer (docs/engine.md, "Drain lanes"). None: all P."""
        choices = drain_lane_choices(self.shape(index, pes), units, self.is_last(index))
        widest = max(choices)  # all P, unless words of P / K values are too long to count in a cycle
        every = self.cycles(index, pes, DATAFLOW, units, private=private, drain_lanes=_lanes(widest, pes))
        limit = float(every.overlapped.mean()) * (1.0 + DRAIN_LANE_SLACK)
        for lanes in sorted(choices):
            if lanes == widest:
                break
            # the drain alone, against the computes of the vectors after it, may already hold the
            # stage longer: then its serializers' outputs (the costly part) need no counting
            drains = self._drains(index, pes, self._drain_length(index, pes, units, private, lanes)[0])
            if float(stage_holds(every.computes, drains, every.empty, empty_drain=every.empty_drain).mean()) > limit:
                continue
            held = self.cycles(index, pes, DATAFLOW, units, private=private, drain_lanes=lanes).overlapped
            if float(held.mean()) <= limit:
                return lanes
        return _lanes(widest, pes)

    def drainable(self, index: int, pes: int, units: int) -> bool:
        """Whether some drain the engine builds serves layer `index` on P PEs and K units
        (drain_lane_choices: not with stacked banks whose words would be too long)."""
        return bool(drain_lane_choices(self.shape(index, pes), units, self.is_last(index)))

    def dataflow(
        self,
        index: int,
        pes: int,
        units: int = 1,
        loaded: bool = False,
        private: bool = False,
        drain_lanes: int | None = None,
        choose_lanes: bool = False,
    ) -> StageCost:
        """A dataflow stage; `loaded`: its weights in UltraRAM, filled by the load phase at a batch's
        start, which the stages share one after the other (so their load cycles add up in the
        latency, as the stages' latencies do); `private`: each unit with P PEs of its own; its drain
        taking `drain_lanes` a cycle (None: P), or with `choose_lanes` the cost model's choice."""
        if choose_lanes:
            drain_lanes = self.drain_lanes(index, pes, units, private)
        cycles = self.cycles(index, pes, DATAFLOW, units, private=private, drain_lanes=drain_lanes)
        logic = engine_logic(self.shape(index, pes).logic(units, private, drain_lanes))
        load_cycles, load_registers = self.load(index, pes) if loaded else (0.0, Resources())
        memories = self.dataflow_memories(index, pes, units, loaded, private=private, drain_lanes=drain_lanes)
        return StageCost(
            stage=Stage(
                DATAFLOW, (index,), pes, URAM if loaded else BRAM, units, private=private, drain_lanes=drain_lanes
            ),
            interval=max(cycles.compute, cycles.occupancy),  # the two accumulator banks ping-pong
            latency=cycles.compute + cycles.occupancy,
            resources=total(memories) + logic + load_registers,
            held=cycles.computing,
            emitted=None if self.is_last(index) else cycles.outputs,
            load=load_cycles,
        )

    # Sequential stages -------------------------------------------------------------------------

    def stripes(self, beat_bytes: int, pes: int) -> list[int]:
        """The memory channels a sequential stage of P PEs and beats of `beat_bytes` may be striped
        over (STRIPES): those whose ports the engine builds (at most MAX_PORT_BITS, whole slots),
        up to the first whose channels deliver a beat a cycle (the stage takes at most one, so
        more would only take channels from other stages), within the board's channels."""
        counts = []
        for channels in STRIPES:
            if channels > max(1, self.board.channels):
                break
            if not stripable(beat_bytes, pes, channels):
                continue
            counts.append(channels)
            if channels * self.board.bytes_per_cycle >= beat_bytes:
                break
        return counts

    def sequential_runs(
        self, first: int, pes: int, channels: int | None = None, limit: float = math.inf
    ) -> Iterator[StageCost]:
        """Sequential stages on P PEs running layers first..b, for b = first, first+1, ..., each
        striped over every count of channels worth it (`stripes`), or over `channels` if given;
        only those of an interval at most `limit`. A run holds a vector for its passes, each at
        least L_PASS, so its interval only grows with its layers: the runs end where the passes
        after the first already exceed `limit` at every striping.

        Built incrementally (the stage's shape grows by one layer at a time), so all runs from
        `first` cost O(layers) together; the scheduler asks for every run of the model. The
        stage's off-chip slots only widen as the run grows: the passes are summed for every width
        the run may still take, and every striping of that width. A pass depends on the one before
        (`LayerCycles.after`): the passes after the first are summed as the run grows, the first's
        follows the run's last.
        """

        def striping(shape: SequentialShape) -> list[int]:
            if shape.slot.width > OFFCHIP_SLOT_WIDTHS[-1]:
                return []
            if channels is None:
                return self.stripes(shape.beat_bytes, pes)
            fits = channels <= max(1, self.board.channels) and shape.striped(channels).buildable
            return [channels] if fits else []

        shape = SequentialShape(pes)
        looped = {  # the passes after the first, per slot width and channels
            (width, count): np.zeros(1)
            for width in OFFCHIP_SLOT_WIDTHS
            for count in (self.stripes(width // 8 * pes, pes) if channels is None else [channels])
        }
        before: dict[tuple[int, int], LayerCycles] = {}  # the run's last layer
        for last in range(first, len(self.layers)):
            shape = shape.then(self.shape(last, pes))
            stripes = striping(shape)
            if not stripes:
                return
            width = shape.slot.width
            for key in [key for key in looped if key[0] < width]:
                del looped[key]
            for key, passes in looped.items():
                cycles = self.cycles(last, pes, SEQUENTIAL, slot_width=key[0], channels=key[1])
                if last > first:
                    looped[key] = passes + cycles.held_after(before[key], looped_back=True)
                before[key] = cycles
            if min(float(passes.mean()) for passes in looped.values()) > limit:
                return
            output = stage_output(self.model, last, pes, 1)
            for count in stripes:
                striped = shape.striped(count)
                opening = self.cycles(first, pes, SEQUENTIAL, slot_width=width, channels=count)
                held = looped[width, count] + opening.held_after(before[width, count], looped_back=False)
                interval = float(held.mean())
                if interval > limit:
                    continue
                memories = sequential_memories(striped, output, self.uram)
                yield StageCost(
                    stage=Stage(SEQUENTIAL, tuple(range(first, last + 1)), pes, OFFCHIP, channels=count),
                    interval=interval,
                    latency=interval,
                    load=striped.load_cycles,  # its tables, through its own reader at a batch's start
                    resources=total(memories)
                    + engine_logic(striped.logic())
                    + Resources(ff=striped.load_register_bits),
                    held=held,
                )

    def passes(self, stage: Stage, intake: np.ndarray | None = None) -> list[LayerCycles]:
        """The cycles of a sequential stage's layers as its passes follow each other. `intake`: per
        vector, how long the next stage takes to accept the stage's outputs through a shallow
        channel, which its serializer cannot outrun (`throttle`)."""
        alone = self.alone(stage)
        if intake is not None:
            outputs = np.maximum(alone[-1].outputs, intake)
            alone[-1] = replace(alone[-1], output=float(outputs.mean()), outputs=outputs)
        return [cycles.after(alone[k - 1], looped_back=k > 0) for k, cycles in enumerate(alone)]

    def alone(self, stage: Stage) -> list[LayerCycles]:
        """The cycles of a sequential stage's layers each alone, in the stage's off-chip slots."""
        width = self.slot_width(stage)
        return [
            self.cycles(index, stage.pes, SEQUENTIAL, slot_width=width, channels=stage.channels)
            for index in stage.layers
        ]

    def intake(self, stage: Stage) -> np.ndarray:
        """Per vector, the cycles a dataflow stage takes its input items in: its units take them as
        they issue their rows."""
        return self.dataflow_cycles(stage).computes

    def dataflow_cycles(self, stage: Stage) -> LayerCycles:
        """The cycles of a dataflow `stage`'s layer, as the stage is built."""
        return self.cycles(
            stage.layers[0], stage.pes, DATAFLOW, stage.units, private=stage.private, drain_lanes=stage.drain_lanes
        )

    def throttle(self, stage: Stage, consumer: Stage | None, deep_channels: str | None) -> np.ndarray | None:
        """The `intake` of `stage`'s passes when its outputs go to a dataflow `consumer` through a
        shallow channel, else None: its serializer emits them only as fast as the consumer takes
        them, and its next vector's first pass waits for the serializer (docs/cost-model.md,
        "Designs"). A sequential stage feeding a dataflow stage slower than its own last pass held
        25% more cycles a vector in Verilator (2,088) than its cost alone (1,674.5). A deep channel
        holds a vector's items."""
        if stage.mode != SEQUENTIAL or consumer is None or consumer.mode != DATAFLOW or deep_channels:
            return None
        return self.intake(consumer)

    def sequential_shape(self, first: int, last: int, pes: int, channels: int = 1) -> SequentialShape:
        return SequentialShape.of(pes, [self.shape(index, pes) for index in range(first, last + 1)], channels)

    def sequential_memories(
        self, first: int, last: int, pes: int, channels: int = 1, deep: str | None = None
    ) -> list[Memory]:
        """Every memory of a sequential stage running layers first..last, its output channel
        `deep` or shallow (fpgagen.engine)."""
        shape = self.sequential_shape(first, last, pes, channels)
        return sequential_memories(shape, stage_output(self.model, last, pes, 1, deep), self.uram)

    def logic(self, stage: Stage) -> LogicShape:
        """What the logic of `stage` is sized by, as the cost model prices it."""
        if stage.mode == DATAFLOW:
            return self.shape(stage.layers[0], stage.pes).logic(stage.units, stage.private, stage.drain_lanes)
        return self.sequential_shape(stage.layers[0], stage.layers[-1], stage.pes, stage.channels).logic()

    def sequential(self, first: int, last: int, pes: int, channels: int = 1) -> StageCost:
        for cost in self.sequential_runs(first, pes, channels):
            if cost.last == last:
                return cost
        raise ValueError(f"no layers {first}..{last} on {pes} PEs striped over {channels} channel(s)")

    def slot_width(self, stage: Stage) -> int | None:
        """The width of a sequential stage's off-chip slots (None for a dataflow stage)."""
        if stage.mode == DATAFLOW:
            return None
        return self.sequential_shape(stage.layers[0], stage.layers[-1], stage.pes).slot.width

    def stage(self, stage: Stage) -> StageCost:
        if stage.mode == DATAFLOW:
            return self.dataflow(
                stage.layers[0], stage.pes, stage.units, stage.weight_memory == URAM, stage.private, stage.drain_lanes
            )
        return self.sequential(stage.layers[0], stage.layers[-1], stage.pes, stage.channels)

    # Whole designs -----------------------------------------------------------------------------

    def roofline(self) -> Roofline:
        """Compute bounds: all DSPs busy on the useful MACs that need a multiplier; all LUTs in PEs
        of the least size the engine can build, each busy on a useful MAC every cycle. Memory
        bound: the off-chip traffic left when on-chip memory holds the most often used weights (a
        fractional knapsack)."""
        board = self.board
        useful = []  # (probability, nonzeros) of every row of every layer
        bits_per_weight = []
        slot_bytes = []  # the narrowest off-chip slot of each row's weights, a PE of one address
        multiplied = pe_luts = 0.0  # per vector: MACs that need a DSP; MACs x their PE's LUTs
        for layer, p, encoding in zip(self.layers, self.activity.probabilities, self.encodings):
            nnz = np.diff(layer.numerics.weights_q.indptr)
            useful.append((p, nnz))
            # the smallest on-chip entry: valid bit, one local-address bit, the weight if any
            bits_per_weight.append(np.full(layer.in_features, 2 + encoding.weight_bits))
            # (a sequential stage keeps a layer's weights in its slots unless it shares one value)
            weight_bits = 0 if encoding.positions_only else layer.numerics.weight_format.bits
            narrowest = offchip_slot(bits_for(0), weight_bits).width // 8
            slot_bytes.append(np.full(layer.in_features, narrowest))
            macs = float(p @ nnz)
            multiplied += macs if encoding.multiplies else 0.0
            pe_luts += macs * least_pe_luts(accumulator_bits(layer.numerics.acc_bits), encoding)
        p = np.concatenate([u[0] for u in useful])
        nnz = np.concatenate([u[1] for u in useful]).astype(np.float64)
        entry = np.concatenate(bits_per_weight)
        macs = float(p @ nnz)
        budget = board_budget(board)
        dsp_bound = math.inf if multiplied == 0 else budget.dsp * board.clock_hz / multiplied
        lut_bound = math.inf if pe_luts == 0 else budget.lut * board.clock_hz / pe_luts
        # Every LUT counted as 64 bits of distributed RAM overstates the fabric's storage, which
        # keeps this an upper bound on any design.
        capacity = budget.bram * BRAM36_BITS + budget.uram * URAM_BITS + budget.lut * LUTRAM_DEPTH
        order = np.argsort(-p, kind="stable")
        row_bits = (nnz * entry)[order]
        kept_bits = np.minimum(row_bits, np.maximum(0.0, capacity - (np.cumsum(row_bits) - row_bits)))
        left_weights = (row_bits - kept_bits) / entry[order]
        offchip = float(p[order] @ (left_weights * np.concatenate(slot_bytes)[order]))
        bandwidth = board.channels * board.channel_gbps * 1e9
        memory_bound = math.inf if offchip <= 0 else bandwidth / offchip
        return Roofline(macs, dsp_bound, lut_bound, offchip, memory_bound)

    def estimate(
        self,
        stages: tuple[Stage, ...],
        batch: int,
        in_lanes: int | None = None,
        deep_channels: str | None = None,
    ) -> DesignEstimate:
        """The figures of a design of `stages` (and a reader of `in_lanes` values a beat, by default
        the engine's choice) over a batch, its channels deep in the kind of memory `deep_channels`
        names, or shallow (None)."""
        layer_estimates: list[LayerEstimate] = []
        stage_estimates: list[StageEstimate] = []
        reader = self.reader(in_lanes)
        if deep_channels:
            reader = replace(reader, resources=reader.resources + self.reader_deepening(reader.lanes, deep_channels))
        held = [reader.held]
        emitted = []
        for number, stage in enumerate(stages):
            cost = self.stage(stage)
            if deep_channels:
                cost = replace(cost, resources=cost.resources + self.output_deepening(stage, deep_channels))
            if stage.mode == DATAFLOW:
                cycles = [self.dataflow_cycles(stage)]
            else:
                consumer = stages[number + 1] if number + 1 < len(stages) else None
                intake = self.throttle(stage, consumer, deep_channels)
                cycles = self.passes(stage, intake)
                if intake is not None:
                    passes_held = sum(layer_cycles.held for layer_cycles in cycles)
                    cost = replace(cost, interval=float(passes_held.mean()), held=passes_held)
            held.append(cost.held)
            emitted.append(cost.emitted)
            for index, layer_cycles in zip(stage.layers, self.counted(stages, number, cycles)):
                layer_estimates.append(
                    LayerEstimate(
                        index=index,
                        name=self.layers[index].name,
                        mode=stage.mode,
                        pes=stage.pes,
                        stage=number,
                        units=stage.units,
                        weight_memory=stage.weight_memory,
                        cycles=layer_cycles,
                        # a dataflow layer is its stage; a sequential one shares its stage's tables and engine
                        resources=cost.resources if stage.mode == DATAFLOW else Resources(),
                    )
                )
            stage_estimates.append(
                StageEstimate(
                    index=number,
                    mode=stage.mode,
                    layers=stage.layers,
                    pes=stage.pes,
                    units=stage.units,
                    weight_memory=stage.weight_memory,
                    channels=stage.channels,
                    interval=cost.interval,
                    latency=cost.latency,
                    resources=cost.resources,
                    load=cost.load,
                    private=stage.private,
                    drain_lanes=stage.drain_lanes,
                )
            )
        chained = self.chained(stages, reader.lanes, deep_channels)
        if in_lockstep(stages):
            interval = chained_interval(reader.held, chained)
        else:
            interval = design_interval(*self.tandem_line(stages, held, emitted, deep_channels))
        return DesignEstimate(
            model=self.model.name,
            board=self.board,
            activity=self.activity.source,
            batch=batch,
            edges=self.model.nnz,
            reader=reader,
            layers=tuple(layer_estimates),
            stages=tuple(stage_estimates),
            roofline=self.roofline(),
            interval=interval,
            latency=self.first_result(stages, reader, [estimate.load for estimate in stage_estimates], chained),
            deep_channels=deep_channels,
        )

    def reader_deepening(self, lanes: int, deep: str) -> Resources:
        """What `deep` channels add to the reader: its channel's FIFOs, deeper and in block RAM or
        UltraRAM instead of LUTRAM."""
        return total(self.reader_memories(lanes, deep)) - total(self.reader_memories(lanes))

    def output_deepening(self, stage: Stage, deep: str) -> Resources:
        """What `deep` channels add to `stage`: its output channel's FIFOs (nothing for the model's
        last stage, which drains dense beats). The scheduler prices every candidate's, so this
        builds the channel alone, not the stage's memories."""
        shallow = self.output(stage)
        if isinstance(shallow, DenseOutput):
            return Resources()
        return total(self.output(stage, deep).memories("output")) - total(shallow.memories("output"))

    def output(self, stage: Stage, deep: str | None = None) -> Output:
        """Where `stage` drains: the next stage's channel (a sub-channel per issue unit of a
        dataflow stage, one for a sequential stage), deep or shallow, or dense beats."""
        units = stage.units if stage.mode == DATAFLOW else 1
        return stage_output(self.model, stage.layers[-1], stage.pes, units, deep)

    def counted(self, stages: tuple[Stage, ...], number: int, cycles: list[LayerCycles]) -> list[LayerCycles]:
        """The cycles of stage `number`'s layers as the RTL counts a layer's busy cycles (its
        work, not its waits): a sequential stage's first layer without its wait for the stage's
        serializer, which it spends drained (docs/cost-model.md, "Sequential passes"); a dataflow
        layer fed by a sequential stage at least as long as that stage's serializer takes to hand
        it the vector's items, one a cycle, which its units work on as they come."""
        stage = stages[number]
        producer = stages[number - 1] if number else None
        if stage.mode == SEQUENTIAL:
            return [self.alone(stage)[0], *cycles[1:]]
        if producer is None or producer.mode != SEQUENTIAL:
            return cycles
        items = self.alone(producer)[-1].items
        computes = np.maximum(cycles[0].computes, items)
        bound = INPUT_BOUND if float(items.mean()) > cycles[0].compute else cycles[0].bound
        return [replace(cycles[0], compute=float(computes.mean()), computes=computes, bound=bound)]

    def chained(self, stages: tuple[Stage, ...], in_lanes: int, deep_channels: str | None) -> list[ChainedStage]:
        """The stages of a design as `chained_interval` and `first_result` follow a vector through
        them: each with its cycles alone (no neighbour's throttle: the recursions have the
        neighbours) and the items the channel into it holds."""
        chained = []
        for number, stage in enumerate(stages):
            if number == 0:
                into = reader_channel(self.model.in_features, in_lanes, deep_channels)
            else:
                into = self.output(stages[number - 1], deep_channels)
            buffer = into.depth + CHANNEL_EXTRA_ITEMS  # a sub-channel's: `items` are the busiest serializer's
            if stage.mode == DATAFLOW:
                last = self.dataflow_cycles(stage)
                single = self.shape(stage.layers[0], stage.pes).single_cycle
                compute, tail, drain, last_drain = last.computing, compute_latency(single), 0.0, 0.0
                takes = self.intake(stage)
            else:
                alone = self.alone(stage)
                first, last = alone[0], alone[-1]
                later = sum((cycles.held for cycles in self.passes(stage)[1:]), np.zeros(1))
                compute, tail, takes = first.computes, first.tails, first.computes - first.tails
                drain, last_drain = first.drain + later, last.drain
            chained.append(
                ChainedStage(
                    sequential=stage.mode == SEQUENTIAL,
                    compute=compute,
                    tail=np.atleast_1d(tail),
                    drain=np.atleast_1d(drain),
                    last_drain=last_drain,
                    outputs=last.outputs,
                    items=last.items,
                    takes=takes,
                    buffer=buffer,
                )
            )
        return chained

    def first_result(
        self, stages: tuple[Stage, ...], reader: ReaderCost, loads: list[float], chained: list[ChainedStage]
    ) -> float:
        """Cycles from a batch's start to its first result's last beat, the mean over the sample's
        vectors of each as the batch's first: the vector followed through the stages (`chained`)
        as `chained_interval` follows every vector, nothing ahead of it (docs/cost-model.md,
        "Designs", latency). Each item reaches the next stage L_HAND_OFF after it left. A stage
        starts on its first item, or when its `loads` have ended if later: the loader fills the
        loaded dataflow stages' UltraRAM one after another after the memory's latency; a
        sequential stage loads its tables through its own reader from the batch's start. It
        computes until its last item came and its compute's tail after it, or at its own pace from
        its start if slower (a sequential stage then runs its later passes); its drain's first item
        comes after the drain's latency, its last after the serializers' items, no sooner than the
        next stage takes them (an empty vector's end words at its turn at the drain); the last
        stage drains its dense beats."""
        if not stages:
            raise ValueError("a design has at least one stage")
        first, last = np.full(1, float(L_READER)), L_READER + reader.held
        loading = float(MEMORY_LATENCY)  # where the loader's chain of loads has got to
        for number, (stage, run, load) in enumerate(zip(stages, chained, loads, strict=True)):
            first, last = first + L_HAND_OFF, last + L_HAND_OFF
            empty = False  # the vectors that take no bank: only a dataflow stage's
            if stage.mode == DATAFLOW:
                loading += load
                start = np.maximum(first, loading if load else 0.0)
                cycles = self.dataflow_cycles(stage)
                done = np.maximum(start + cycles.computes, last + run.tail)
                drain_start, result = done, done + cycles.drain_each
                empty = False if cycles.empty is None else cycles.empty
            else:
                start = np.maximum(first, load)
                done = np.maximum(start + L_PASS + run.compute, last + run.tail) + run.drain
                drain_start, result = done - run.last_drain, done
            if number + 1 < len(stages):
                out, items = np.where(empty, L_EMPTY, run.outputs), np.where(empty, 0.0, run.items)
                taker = chained[number + 1]
                first = drain_start + out - items
                last = handed_on(drain_start + out, items, taker.takes, taker.buffer, 0.0)
        return float(np.mean(result))

    def tandem_line(
        self,
        stages: tuple[Stage, ...],
        held: list[np.ndarray],
        emitted: list[np.ndarray | None],
        deep_channels: str | None,
    ) -> tuple[list[np.ndarray], list[float], list[np.ndarray]]:
        """The units of `design_interval` (how long each holds each vector), the capacities between
        them and the vectors that take a place there: the reader, then each stage and, where they
        are a unit of their own (`emitted`), its serializers behind its word FIFOs
        (`word_fifo_ahead`), the channel to the next stage between (DEEP_CHANNEL_AHEAD or
        SHALLOW_CHANNEL_AHEAD). A drain writes words only for a vector with a nonzero output."""
        ahead = DEEP_CHANNEL_AHEAD if deep_channels else SHALLOW_CHANNEL_AHEAD
        into = self.placed(stages)  # the vectors that take a place in the channel into each stage
        units, capacities, placed = [held[0]], [], []
        for number, (stage, stage_held, serializers) in enumerate(zip(stages, held[1:], emitted)):
            capacities.append(ahead)
            placed.append(into[number])
            units.append(stage_held)
            if serializers is not None:
                addresses = self.shape(stage.layers[0], stage.pes).addresses
                capacities.append(word_fifo_ahead(addresses, stage.pes, stage.drain_lanes))
                placed.append(into[number + 1])  # the design's last stage drains dense beats
                units.append(serializers)
        return units, capacities, placed

    def placed(self, stages: tuple[Stage, ...]) -> list[np.ndarray]:
        """Per vector, whether the reader and each stage but the last take a place in the channel
        behind them (`design_interval`): the reader always (it writes a word for every group of
        every beat), a stage when one of its outputs is nonzero (its drain writes no word without)."""
        placed = [np.ones(1, bool)]
        for stage in stages[:-1]:
            outputs = self.activity.inputs(stage.layers[-1] + 1).rows
            placed.append(outputs.sum(axis=1) > 0)
        return placed
