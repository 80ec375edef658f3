"""The merger (fg_merger.v) alone under cocotb, for every S and K the engine builds (1, 2, 4): every
activation reaches exactly one unit, each unit gets an equal share of a vector within one and one
end item after it, a unit is written only when every unit showed room (and the merger was enabled)
the cycle before, and without stalls it keeps the rate of docs/engine.md, "Merger"
(tests/merger_tb.py); with SKIP_EMPTY a vector without activations deals no end item and is
marked `vector_empty`, the others are not. Icarus runs every pair both ways by default, Verilator
one pair both ways (the rest with -m slow)."""

from __future__ import annotations

import pytest
from library_module import run_library_module

IDX_W = 10
PAIRS = [(s, k) for s in (1, 2, 4) for k in (1, 2, 4)]
RUNS = [
    pytest.param(s, k, skip, simulator, id=f"S{s}-K{k}-{'skip-' if skip else ''}{simulator}", marks=marks)
    for s, k in PAIRS
    for skip in (0, 1)
    for simulator, marks in (("icarus", ()), ("verilator", () if (s, k) == (4, 2) else pytest.mark.slow))
]


@pytest.mark.parametrize(("subs", "units", "skip", "simulator"), RUNS)
def test_merger_deals_by_the_rules(subs, units, skip, simulator, tmp_path):
    parameters = {"S": subs, "K": units, "IDX_W": IDX_W, "SKIP_EMPTY": skip}
    config = {**parameters, "seed": subs * 10 + units, "vectors": 12, "cycles": 20000}
    run_library_module(simulator, "fg_merger", ["fg_merger.v"], parameters, "merger_tb", config, 2, tmp_path)
