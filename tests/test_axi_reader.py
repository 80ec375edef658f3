"""The AXI read master (fg_axi_reader.v) alone under cocotb (tests/axi_reader_tb.py): random reads,
some across a 4 KB page or longer than 256 beats, on a channel and a memory that stall; every read
becomes the fewest legal bursts, in order, with at most MAX_BURSTS in flight. Two widths: 64-byte
beats (P = 16), where the page limits a burst, and 4-byte beats (P = 1), where 256 beats do. Icarus
runs both by default, Verilator one (the other with -m slow)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fpgagen.simulate import verilator_on_path

LIB = Path(__file__).resolve().parent.parent / "templates" / "rtl" / "lib"
# (DATA_W, MAX_BURSTS): 64 beats to a page with a limit on bursts in flight reached all the time;
# 1024 beats to a page, so 256 beats end a burst first, with the engine's limit (MAX_BURSTS)
SHAPES = ((512, 4), (32, 64))
RUNS = [pytest.param(width, limit, "icarus", id=f"w{width}-max{limit}-icarus") for width, limit in SHAPES] + [
    pytest.param(
        width, limit, "verilator", id=f"w{width}-max{limit}-verilator", marks=() if limit == 4 else pytest.mark.slow
    )
    for width, limit in SHAPES
]


@pytest.mark.parametrize(("data_w", "max_bursts", "simulator"), RUNS)
def test_reads_become_legal_bursts_in_order(data_w, max_bursts, simulator, tmp_path):
    from cocotb_tools.runner import get_runner

    if simulator == "icarus" and shutil.which("iverilog") is None:
        pytest.skip("Icarus Verilog is not installed (apt-get install iverilog)")
    if simulator == "verilator":
        verilator_on_path()
    runner = get_runner(simulator)
    parameters = {"DATA_W": data_w, "LEN_W": 16, "MAX_BURSTS": max_bursts}
    runner.build(
        sources=[LIB / "fg_axi_reader.v", LIB / "fg_resize.v"], hdl_toplevel="fg_axi_reader", build_dir=tmp_path,
        timescale=("1ns", "1ps"), parameters=parameters, always=True, log_file=tmp_path / "build.log",
    )  # fmt: skip
    config = {**parameters, "seed": max_bursts, "reads": 40, "cycles": 80000}
    try:
        results = runner.test(
            hdl_toplevel="fg_axi_reader", hdl_toplevel_lang="verilog", test_module="axi_reader_tb",
            build_dir=tmp_path, test_dir=tmp_path, timescale=("1ns", "1ps"), log_file=tmp_path / "sim.log",
            extra_env={"AXI_READER_TEST": json.dumps(config), "COCOTB_LOG_LEVEL": "WARNING"},
        )  # fmt: skip
    except SystemExit:  # the runner exits on a failed test
        pytest.fail((tmp_path / "sim.log").read_text()[-4000:])
    report = Path(results).read_text()
    assert report.count("<testcase") == 2 and "<failure" not in report, (tmp_path / "sim.log").read_text()[-4000:]
