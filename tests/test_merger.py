"""The merger (fg_merger.v) alone under cocotb, for every S and K the engine builds (1, 2, 4): every
activation reaches exactly one unit, each unit gets an equal share of a vector within one and one
end item after it, a unit is written only when every unit showed room (and the merger was enabled)
the cycle before, and without stalls it keeps the rate of docs/engine.md, "Merger"
(tests/merger_tb.py). Icarus runs every pair by default, Verilator one (the rest with -m slow)."""

from __future__ import annotations

import pytest
from library_module import run_library_module

IDX_W = 10
PAIRS = [(s, k) for s in (1, 2, 4) for k in (1, 2, 4)]
RUNS = [pytest.param(s, k, "icarus", id=f"S{s}-K{k}-icarus") for s, k in PAIRS] + [
    pytest.param(s, k, "verilator", id=f"S{s}-K{k}-verilator", marks=() if (s, k) == (4, 2) else pytest.mark.slow)
    for s, k in PAIRS
]


@pytest.mark.parametrize(("subs", "units", "simulator"), RUNS)
def test_merger_deals_by_the_rules(subs, units, simulator, tmp_path):
    parameters = {"S": subs, "K": units, "IDX_W": IDX_W}
    config = {**parameters, "seed": subs * 10 + units, "vectors": 12, "cycles": 20000}
    run_library_module(simulator, "fg_merger", ["fg_merger.v"], parameters, "merger_tb", config, 2, tmp_path)
