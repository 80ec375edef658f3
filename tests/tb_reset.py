"""The reset every cocotb testbench of one library module starts with (tests/*_tb.py)."""

from __future__ import annotations

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

RESET_CYCLES = 3


async def reset(dut, inputs: tuple[str, ...]) -> None:
    """Start dut.clk (10 ns), hold dut.rst high for RESET_CYCLES cycles with `inputs` at zero, and
    release it."""
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    for name in inputs:
        getattr(dut, name).value = 0
    for _ in range(RESET_CYCLES):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
