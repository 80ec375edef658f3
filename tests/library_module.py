"""Run one module of the RTL library (templates/rtl/lib) alone under cocotb, its testbench given a
JSON configuration in an environment variable (tests/test_merger.py, tests/test_axi_reader.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fpgagen.simulate import verilator_on_path

LIB = Path(__file__).resolve().parent.parent / "templates" / "rtl" / "lib"


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

    if simulator == "icarus" and shutil.which("iverilog") is None:
        pytest.skip("Icarus Verilog is not installed (apt-get install iverilog)")
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
