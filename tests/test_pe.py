"""The PE (fg_pe.v) alone under cocotb, for K = 2 and 4 issue units and both read-modify-writes
(one cycle in LUT RAM, and pipelined with forwarding): every drained bank holds exactly its
vector's sums, and the oldest vector is finished first (tests/pe_tb.py). Icarus runs every
combination by default, Verilator one (the rest with -m slow)."""

from __future__ import annotations

import pytest
from library_module import PE_SOURCES, run_library_module

COMBINATIONS = [(k, single) for k in (2, 4) for single in (1, 0)]
RUNS = [pytest.param(k, single, "icarus", id=f"K{k}-single{single}-icarus") for k, single in COMBINATIONS] + [
    pytest.param(
        k,
        single,
        "verilator",
        id=f"K{k}-single{single}-verilator",
        marks=() if (k, single) == (4, 1) else pytest.mark.slow,
    )
    for k, single in COMBINATIONS
]


@pytest.mark.parametrize(("units", "single_cycle", "simulator"), RUNS)
def test_pe_sums_and_finishes_the_oldest_vector_first(units, single_cycle, simulator, tmp_path):
    # A Graph Challenge PE: positions only, 16 local addresses of 22-bit sums
    parameters = {
        "K": units, "LOCAL_W": 4, "ADDRESSES": 16, "W_BITS": 0, "SUM_W": 22, "SCALE": 1, "SCALE_SHIFT": 0,
        "FIFO_DEPTH": 64, "SLACK": 8, "SINGLE_CYCLE": single_cycle,
    }  # fmt: skip
    config = {**parameters, "seed": units * 10 + single_cycle, "vectors": 8}
    run_library_module(simulator, "fg_pe", PE_SOURCES, parameters, "pe_tb", config, 3, tmp_path)
