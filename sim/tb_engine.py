"""cocotb testbench for any design fpgagen compiles (and the RTL Vitis HLS makes of its C++).

It reads the design's manifest and test vectors, loads the off-chip weight images into AXI RAM
models, streams the inputs through AXI4-Stream, starts the design through AXI4-Lite (or the
ap_ctrl_hs pins of a core without it), compares every output with the golden model bit for bit,
and writes cycles and the first mismatch to a JSON file. Environment:
  FPGAGEN_MANIFEST  the design's manifest.json
  FPGAGEN_VECTORS   a vectors folder (fpgagen/vectors.py format)
  FPGAGEN_RESULTS   where to write the results JSON
  FPGAGEN_PROGRESS  (optional) a file that holds the number of outputs received so far, which
                    `fpgagen sim` reads to show the progress of a long simulation
  FPGAGEN_RESET_AFTER  (optional) reset the design after this many outputs, with the rest of the
                    batch in flight, then run the whole batch again and compare that run
  FPGAGEN_MEMORY_LATENCY  (optional) cycles from a read burst's address to its first data; by
                    default each port's `memory_latency` in the manifest
  FPGAGEN_MOVE_IMAGES  (optional) after the batch, move every weight image to another address,
                    clear the old one, and run the batch again without a reset, comparing that
                    run: a sequential stage's load phase must take the tables from the new image

Each weight port's memory returns a burst `memory_latency` cycles after taking its address, with
any number of bursts in flight (an HBM pseudo channel takes many), at the port's bandwidth.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.queue import Queue
from cocotb.triggers import ClockCycles, Event, RisingEdge, with_timeout
from cocotbext.axi import (
    AxiBus,
    AxiLiteBus,
    AxiLiteMaster,
    AxiStreamBus,
    AxiStreamFrame,
    AxiStreamSink,
    AxiStreamSource,
)
from cocotbext.axi.axi_ram import AxiRamRead
from cocotbext.axi.constants import AxiBurstType, AxiResp
from cocotbext.axi.memory import Memory

from fpgagen.vectors import read_vectors

CONTROL = 0x00
AP_START, AP_DONE = 0x1, 0x2
WEIGHTS_BASE = 0x1000_0000  # where port k's image sits: WEIGHTS_BASE * (k + 1)
TIMEOUT_CYCLES_PER_VECTOR = 200_000
CLOCK_NS = 10


def _cycle() -> int:
    return int(cocotb.utils.get_sim_time("ns") // CLOCK_NS)


class DelayedRead(AxiRamRead):
    """The read side of an AXI4 RAM whose bursts start `latency` cycles after their address was
    taken. Addresses are taken as they come, so any number of bursts are in flight; the data of
    each follows in order, at the pace the R channel's pause pattern allows."""

    def __init__(self, bus: AxiBus, clock, reset, mem, latency: int):
        self.latency = latency
        self.beats_served = 0  # what the channel moved in a batch: the load phase's tables and the rows' beats
        self._taker = None
        super().__init__(bus.read, clock, reset, reset_active_level=False, mem=mem)

    def _handle_reset(self, state):
        if state and self._taker is not None:
            self._taker.cancel()
            self._taker = None
        super()._handle_reset(state)

    async def _take_addresses(self, accepted: Queue) -> None:
        while True:
            ar = await self.ar_channel.recv()
            accepted.put_nowait((_cycle() + self.latency, ar))

    async def _process_read(self):
        accepted = Queue()
        self._taker = cocotb.start_soon(self._take_addresses(accepted))
        while True:
            due, ar = await accepted.get()
            while _cycle() < due:
                await RisingEdge(self.clock)
            # the engine's reader asks for whole beats in INCR bursts (fg_axi_reader.v)
            assert int(ar.arburst) == AxiBurstType.INCR and 2 ** int(ar.arsize) == self.byte_lanes
            address = int(ar.araddr)
            beats = int(ar.arlen) + 1
            for beat in range(beats):
                r = self.r_channel._transaction_obj()
                r.rid = int(getattr(ar, "arid", 0))
                r.rlast = beat == beats - 1
                r.rresp = AxiResp.OKAY
                r.rdata = int.from_bytes(self.read(address + beat * self.byte_lanes, self.byte_lanes), "little")
                await self.r_channel.send(r)
                self.beats_served += 1


def _throttle(bytes_per_cycle: float, beat_bytes: int):
    """A pause pattern that lets the RAM return beat_bytes every beat_bytes/bytes_per_cycle cycles."""
    if bytes_per_cycle >= beat_bytes:
        return None
    period = 64
    busy = max(1, round(period * bytes_per_cycle / beat_bytes))
    return itertools.cycle([False] * busy + [True] * (period - busy))


class Harness:
    def __init__(self, dut, manifest: dict):
        self.dut = dut
        self.rtl = manifest["rtl"]
        self.clock = dut.ap_clk
        self.axilite = hasattr(dut, "s_axi_control_AWVALID")
        self.source = AxiStreamSource(
            AxiStreamBus.from_prefix(dut, "x_in"), self.clock, dut.ap_rst_n, reset_active_level=False
        )
        self.sink = AxiStreamSink(
            AxiStreamBus.from_prefix(dut, "y_out"), self.clock, dut.ap_rst_n, reset_active_level=False
        )
        self.control = None
        if self.axilite:
            self.control = AxiLiteMaster(
                AxiLiteBus.from_prefix(dut, "s_axi_control"), self.clock, dut.ap_rst_n, reset_active_level=False
            )
        self.done = Event()
        self.rams = []
        self.images = []
        outdir = Path(os.environ["FPGAGEN_MANIFEST"]).parent
        for port in self.rtl["ports"]:
            image = (outdir / port["image"]).read_bytes()
            base = WEIGHTS_BASE * (port["port"] + 1)
            memory = Memory(size=2 * WEIGHTS_BASE * (port["port"] + 1))
            memory.write(base, image)
            latency = int(os.environ.get("FPGAGEN_MEMORY_LATENCY", port["memory_latency"]))
            bus = AxiBus.from_prefix(dut, f"m_axi_gmem{port['port']}")
            ram = DelayedRead(bus, self.clock, dut.ap_rst_n, memory.mem, latency)
            pattern = _throttle(port["bytes_per_cycle"], port["data_bits"] // 8)
            if pattern is not None:
                ram.r_channel.set_pause_generator(pattern)
            self.rams.append((port, base, ram))
            self.images.append((memory, image))

    async def reset(self):
        cocotb.start_soon(Clock(self.clock, CLOCK_NS, unit="ns").start())
        await self.hold_reset()

    async def hold_reset(self):
        self.dut.ap_rst_n.value = 0
        if not self.axilite:
            self.dut.ap_start.value = 0
            self.dut.batch.value = 0
            for port, base, _ in self.rams:
                getattr(self.dut, f"weights{port['port']}").value = base
        await ClockCycles(self.clock, 1)
        # what the stream models still hold belongs to the run the reset ends
        self.source.clear()
        self.sink.clear()
        await ClockCycles(self.clock, 4)
        self.dut.ap_rst_n.value = 1
        await ClockCycles(self.clock, 2)

    def move_images(self) -> None:
        """Each image to the 4 KB page after its end; its old place cleared."""
        for index, ((port, base, ram), (memory, image)) in enumerate(zip(self.rams, self.images)):
            moved = base + -(-len(image) // 4096) * 4096
            memory.write(moved, image)
            memory.write(base, bytes(len(image)))
            self.rams[index] = (port, moved, ram)

    async def start(self, batch: int):
        if self.axilite:
            registers = self.rtl["control"]
            for port, base, _ in self.rams:
                offset = registers[f"weights{port['port']}"]
                await self.control.write_dword(offset, base & 0xFFFFFFFF)
                await self.control.write_dword(offset + 4, base >> 32)
            await self.control.write_dword(registers["batch"], batch)
            await self.control.write_dword(CONTROL, AP_START)
        else:
            for port, base, _ in self.rams:
                getattr(self.dut, f"weights{port['port']}").value = base
            self.dut.batch.value = batch
            self.dut.ap_start.value = 1
            cocotb.start_soon(self._hold_start_until_ready())

    async def _hold_start_until_ready(self):
        """ap_ctrl_hs: the master holds ap_start until the block raises ap_ready."""
        while True:
            await RisingEdge(self.clock)
            if self.dut.ap_ready.value == 1:
                self.dut.ap_start.value = 0
                self.done.set()
                return

    async def wait_done(self, limit_ns: int) -> None:
        if not self.axilite:
            await with_timeout(self.done.wait(), limit_ns, "ns")
            return
        while not (await self.control.read_dword(CONTROL)) & AP_DONE:
            pass

    def counters(self) -> list[dict]:
        """Per-layer busy and drain cycles from the design's performance counters (fpgagen's RTL
        has them; other RTL of the same design, such as Vitis HLS's, has none)."""
        found = []
        core = getattr(self.dut, "u_core", None) if self.axilite else self.dut
        for entry in self.rtl["perf"]:
            stage = getattr(core, entry["instance"], None) if core is not None else None
            if stage is None:
                return []
            slot = entry["slot"]
            busy = int(stage.perf_busy.value) >> (32 * slot) & 0xFFFFFFFF
            drain = int(stage.perf_drain.value) >> (32 * slot) & 0xFFFFFFFF
            found.append({"layer": entry["layer"], "busy_cycles": busy, "drain_cycles": drain})
        return found


def _report_progress(done: int) -> None:
    path = os.environ.get("FPGAGEN_PROGRESS")
    if path:
        partial = f"{path}.partial"
        Path(partial).write_text(str(done))
        os.replace(partial, path)  # the reader never sees a half-written number


def _frame(values: np.ndarray, lanes: int) -> AxiStreamFrame:
    padded = np.zeros(-(-values.size // lanes) * lanes, dtype="<i2")
    padded[: values.size] = values
    return AxiStreamFrame(padded.tobytes())


async def _start_batch(harness: Harness, vectors) -> None:
    """Queue the batch's inputs on the stream and start the design."""
    for x in vectors.x_q:
        await harness.source.send(_frame(x, harness.rtl["in_lanes"]))
    await harness.start(vectors.batch)


async def _interrupted_run(harness: Harness, vectors, outputs: int, limit_ns: int) -> None:
    """Run the batch until `outputs` outputs are out and a few cycles more, so that the next vectors
    are inside the engine (partial sums in the PEs' banks), then reset the design and drop what the
    stream models still hold."""
    await _start_batch(harness, vectors)
    for _ in range(outputs):
        await with_timeout(harness.sink.recv(), limit_ns, "ns")
    await ClockCycles(harness.clock, 20)
    await harness.hold_reset()
    harness.done.clear()


async def _run_batch(harness: Harness, vectors, limit: int) -> tuple[list[np.ndarray], int, int]:
    """One batch: its outputs, the cycles to the first and to the end."""
    for _, _, ram in harness.rams:
        ram.beats_served = 0  # this batch's reads only, like the cycle counts
    await _start_batch(harness, vectors)
    clock_start = cocotb.utils.get_sim_time("ns")
    outputs, first_out = [], None
    for _ in range(vectors.batch):
        frame = await with_timeout(harness.sink.recv(), 10 * limit, "ns")
        if first_out is None:
            first_out = cocotb.utils.get_sim_time("ns")
        outputs.append(np.frombuffer(bytes(frame.tdata), dtype="<i2")[: harness.rtl["out_features"]])
        _report_progress(len(outputs))
    await harness.wait_done(10 * limit)
    total_cycles = int((cocotb.utils.get_sim_time("ns") - clock_start) // CLOCK_NS)
    return outputs, int((first_out - clock_start) // CLOCK_NS), total_cycles


def _first_mismatch(outputs: list[np.ndarray], expected: np.ndarray, layer: str) -> dict | None:
    for n, (got, want) in enumerate(zip(outputs, expected)):
        bad = np.flatnonzero(got != want)
        if bad.size:
            j = int(bad[0])
            return {"layer": layer, "vector": n, "index": j, "expected": int(want[j]), "got": int(got[j])}
    return None


def _counted(entry: dict, earlier: dict | None, batch: int) -> dict:
    """A layer's counters over the last batch, and per vector."""
    if earlier is not None:
        entry = dict(entry, busy_cycles=entry["busy_cycles"] - earlier["busy_cycles"],
                     drain_cycles=entry["drain_cycles"] - earlier["drain_cycles"])  # fmt: skip
    return dict(entry, busy_per_vector=entry["busy_cycles"] / batch, drain_per_vector=entry["drain_cycles"] / batch)


@cocotb.test()
async def run_vectors(dut):
    manifest = json.loads(Path(os.environ["FPGAGEN_MANIFEST"]).read_text())
    vectors = read_vectors(Path(os.environ["FPGAGEN_VECTORS"]))
    harness = Harness(dut, manifest)
    rtl = harness.rtl
    await harness.reset()

    expected = vectors.layer_outputs[-1]
    limit = TIMEOUT_CYCLES_PER_VECTOR * vectors.batch
    reset_after = os.environ.get("FPGAGEN_RESET_AFTER")
    if reset_after is not None:
        await _interrupted_run(harness, vectors, min(int(reset_after), vectors.batch - 1), 10 * limit)
    outputs, first_output_cycles, total_cycles = await _run_batch(harness, vectors, limit)
    mismatch = _first_mismatch(outputs, expected, rtl["last_layer"])
    earlier = {}  # the counters before the batch reported: none, they start at the reset
    if os.environ.get("FPGAGEN_MOVE_IMAGES") and mismatch is None:
        # A second batch from the moved images (the first one checked too); the counters run on
        # from the first, so the second's own cycles are the difference.
        earlier = {entry["layer"]: entry for entry in harness.counters()}
        harness.move_images()
        harness.done.clear()
        outputs, first_output_cycles, total_cycles = await _run_batch(harness, vectors, limit)
        mismatch = _first_mismatch(outputs, expected, rtl["last_layer"])
    results = {
        "passed": mismatch is None,
        "vectors": vectors.batch,
        "total_cycles": total_cycles,
        "cycles_per_vector": total_cycles / vectors.batch,
        "first_output_cycles": first_output_cycles,
        "first_mismatch": mismatch,
        "memory_latency": [ram.latency for _, _, ram in harness.rams],
        "memory_beats": [ram.beats_served for _, _, ram in harness.rams],
        "layers": [_counted(entry, earlier.get(entry["layer"]), vectors.batch) for entry in harness.counters()],
        "control": "axi4-lite" if harness.axilite else "ap_ctrl_hs",
    }
    Path(os.environ["FPGAGEN_RESULTS"]).write_text(json.dumps(results, indent=2) + "\n")
    assert mismatch is None, (
        f"MISMATCH layer={mismatch['layer']} vector={mismatch['vector']} index={mismatch['index']} "
        f"expected={mismatch['expected']} got={mismatch['got']}"
    )
