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
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, Event, RisingEdge, with_timeout
from cocotbext.axi import (
    AxiBus,
    AxiLiteBus,
    AxiLiteMaster,
    AxiRam,
    AxiStreamBus,
    AxiStreamFrame,
    AxiStreamSink,
    AxiStreamSource,
)

from fpgagen.vectors import read_vectors

CONTROL = 0x00
AP_START, AP_DONE = 0x1, 0x2
WEIGHTS_BASE = 0x1000_0000  # where port k's image sits: WEIGHTS_BASE * (k + 1)
TIMEOUT_CYCLES_PER_VECTOR = 200_000


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
        outdir = Path(os.environ["FPGAGEN_MANIFEST"]).parent
        for port in self.rtl["ports"]:
            image = (outdir / port["image"]).read_bytes()
            base = WEIGHTS_BASE * (port["port"] + 1)
            ram = AxiRam(
                AxiBus.from_prefix(dut, f"m_axi_gmem{port['port']}"),
                self.clock,
                dut.ap_rst_n,
                reset_active_level=False,
                size=2 * WEIGHTS_BASE * (port["port"] + 1),
            )
            ram.write(base, image)
            pattern = _throttle(port["bytes_per_cycle"], port["data_bits"] // 8)
            if pattern is not None:
                ram.read_if.r_channel.set_pause_generator(pattern)
            self.rams.append((port, base, ram))

    async def reset(self):
        cocotb.start_soon(Clock(self.clock, 10, unit="ns").start())
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


async def _interrupted_run(harness: Harness, vectors, outputs: int, limit_ns: int) -> None:
    """Run the batch until `outputs` outputs are out and a few cycles more, so that the next vectors
    are inside the engine (partial sums in the PEs' banks), then reset the design and drop what the
    stream models still hold."""
    for x in vectors.x_q:
        await harness.source.send(_frame(x, harness.rtl["in_lanes"]))
    await harness.start(vectors.batch)
    for _ in range(outputs):
        await with_timeout(harness.sink.recv(), limit_ns, "ns")
    await ClockCycles(harness.clock, 20)
    await harness.hold_reset()
    harness.done.clear()


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
    for x in vectors.x_q:
        await harness.source.send(_frame(x, rtl["in_lanes"]))
    await harness.start(vectors.batch)
    clock_start = cocotb.utils.get_sim_time("ns")

    outputs, first_out = [], None
    for _ in range(vectors.batch):
        frame = await with_timeout(harness.sink.recv(), 10 * limit, "ns")
        if first_out is None:
            first_out = cocotb.utils.get_sim_time("ns")
        outputs.append(np.frombuffer(bytes(frame.tdata), dtype="<i2")[: rtl["out_features"]])
        _report_progress(len(outputs))
    await harness.wait_done(10 * limit)
    total_cycles = int((cocotb.utils.get_sim_time("ns") - clock_start) // 10)

    mismatch = None
    for n, (got, want) in enumerate(zip(outputs, expected)):
        bad = np.flatnonzero(got != want)
        if bad.size:
            j = int(bad[0])
            mismatch = {
                "layer": rtl["last_layer"],
                "vector": n,
                "index": j,
                "expected": int(want[j]),
                "got": int(got[j]),
            }
            break
    results = {
        "passed": mismatch is None,
        "vectors": vectors.batch,
        "total_cycles": total_cycles,
        "cycles_per_vector": total_cycles / vectors.batch,
        "first_output_cycles": int((first_out - clock_start) // 10),
        "first_mismatch": mismatch,
        "layers": [
            dict(
                entry,
                busy_per_vector=entry["busy_cycles"] / vectors.batch,
                drain_per_vector=entry["drain_cycles"] / vectors.batch,
            )
            for entry in harness.counters()
        ],
        "control": "axi4-lite" if harness.axilite else "ap_ctrl_hs",
    }
    Path(os.environ["FPGAGEN_RESULTS"]).write_text(json.dumps(results, indent=2) + "\n")
    assert mismatch is None, (
        f"MISMATCH layer={mismatch['layer']} vector={mismatch['vector']} index={mismatch['index']} "
        f"expected={mismatch['expected']} got={mismatch['got']}"
    )
