"""Running `fpgagen sim` from the RTL tests: which simulators there are, and a passing run's results."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

SIMULATORS = ["icarus", "verilator"]


def require(simulator: str) -> None:
    if simulator == "icarus" and shutil.which("iverilog") is None:
        pytest.skip("Icarus Verilog is not installed (apt-get install iverilog)")


def simulate(run_cli, outdir: Path, simulator: str, *options) -> dict:
    result = run_cli("sim", outdir, "--simulator", simulator, *options)
    assert result.exit_code == 0, result.stderr + result.stdout
    results = json.loads((outdir / "sim_results.json").read_text())
    assert results["passed"] and results["simulator"] == simulator
    return results
