"""The AXI read master (fg_axi_reader.v) alone under cocotb (tests/axi_reader_tb.py): random reads,
some across a 4 KB page or longer than 256 beats, on a channel and a memory that stall; every read
becomes the fewest legal bursts, in order, with at most MAX_BURSTS in flight. Two widths: 64-byte
beats (P = 16), where the page limits a burst, and 4-byte beats (P = 1), where 256 beats do. Icarus
runs both by default, Verilator one (the other with -m slow)."""

from __future__ import annotations

import pytest
from library_module import run_library_module

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
    parameters = {"DATA_W": data_w, "LEN_W": 16, "MAX_BURSTS": max_bursts}
    config = {**parameters, "seed": max_bursts, "reads": 40, "cycles": 80000}
    sources = ["fg_axi_reader.v", "fg_resize.v"]
    run_library_module(simulator, "fg_axi_reader", sources, parameters, "axi_reader_tb", config, 2, tmp_path)
