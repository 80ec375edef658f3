"""The merger (fg_merger.v) alone under cocotb, for every S and K the engine builds (1, 2, 4): every
activation reaches exactly one unit, each unit gets an equal share of a vector within one and one
end item after it, a unit is written only when every unit showed room (and the merger was enabled)
the cycle before, and without stalls it keeps the rate of docs/engine.md, "Merger"
(tests/merger_tb.py). Icarus runs every pair by default, Verilator one (the rest with -m slow)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fpgagen.simulate import verilator_on_path

LIB = Path(__file__).resolve().parent.parent / "templates" / "rtl" / "lib"
IDX_W = 10
PAIRS = [(s, k) for s in (1, 2, 4) for k in (1, 2, 4)]
RUNS = [pytest.param(s, k, "icarus", id=f"S{s}-K{k}-icarus") for s, k in PAIRS] + [
    pytest.param(s, k, "verilator", id=f"S{s}-K{k}-verilator", marks=() if (s, k) == (4, 2) else pytest.mark.slow)
    for s, k in PAIRS
]


def run_merger(simulator: str, subs: int, units: int, build: Path) -> None:
    from cocotb_tools.runner import get_runner

    if simulator == "icarus" and shutil.which("iverilog") is None:
        pytest.skip("Icarus Verilog is not installed (apt-get install iverilog)")
    if simulator == "verilator":
        verilator_on_path()
    runner = get_runner(simulator)
    runner.build(
        sources=[LIB / "fg_merger.v"], hdl_toplevel="fg_merger", build_dir=build, timescale=("1ns", "1ps"),
        parameters={"S": subs, "K": units, "IDX_W": IDX_W}, always=True, log_file=build / "build.log",
    )  # fmt: skip
    config = {"S": subs, "K": units, "IDX_W": IDX_W, "seed": subs * 10 + units, "vectors": 12, "cycles": 20000}
    try:
        results = runner.test(
            hdl_toplevel="fg_merger", hdl_toplevel_lang="verilog", test_module="merger_tb", build_dir=build,
            test_dir=build, timescale=("1ns", "1ps"), log_file=build / "sim.log",
            extra_env={"MERGER_TEST": json.dumps(config), "COCOTB_LOG_LEVEL": "WARNING"},
        )  # fmt: skip
    except SystemExit:  # the runner exits on a failed test
        pytest.fail((build / "sim.log").read_text()[-4000:])
    report = Path(results).read_text()
    assert report.count("<testcase") == 2 and "<failure" not in report, (build / "sim.log").read_text()[-4000:]


@pytest.mark.parametrize(("subs", "units", "simulator"), RUNS)
def test_merger_deals_by_the_rules(subs, units, simulator, tmp_path):
    run_merger(simulator, subs, units, tmp_path)
