"""The clock a design is credited with: the board's, only where the engine's paths can meet it.

A path of L LUT levels (LUTs and their nets, between two registers) plausibly closes at a clock
period proportional to L on a given device family. The rule of thumb fpgagen uses is the one
designers use on UltraScale+: about 6 levels at 300 MHz (docs/engine.md, "Timing"); 7-series
fabric is slower, about 6 levels at 200 MHz. These are planning figures, not timing closure: only
place and route (Vivado) decides the clock. What fpgagen does measure is the logic depth, on the
Yosys netlists of `fpgagen synth` and bench/bench_timing.py. ENGINE_LEVELS is the engine's target,
and bench/results/timing.json has every one of its designs within it on the current RTL: 6 on the
Graph Challenge designs at P=16, 40 and 64 (the PE's choice of FIFO) and sequential, 5 or 6 on the
tests' small designs. Designs it has not synthesized are credited on that evidence.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..schedule.boards import Board

ENGINE_LEVELS = 6  # the engine's target depth (bench/results/timing.json)

ULTRASCALE_PLUS, SEVEN_SERIES = "UltraScale+", "7 series"
# the clock (MHz) at which a path of REFERENCE_LEVELS levels plausibly closes, per family
_REFERENCE_LEVELS = 6
_REFERENCE_MHZ = {ULTRASCALE_PLUS: 300.0, SEVEN_SERIES: 200.0}
# part numbers: Alveo (xcu), Zynq UltraScale+ (xczu), Virtex, Kintex and Artix UltraScale+ (a "p")
_ULTRASCALE_PLUS_PART = re.compile(r"^xc(u\d|zu|vu\d+p|ku\d+p|au\d+p)", re.IGNORECASE)


def family(part: str) -> str:
    """The device family of a part number; anything not UltraScale+ gets the slower 7-series
    figure (an unknown part is not credited with a fast fabric)."""
    return ULTRASCALE_PLUS if _ULTRASCALE_PLUS_PART.match(part) else SEVEN_SERIES


def reachable_mhz(part: str, levels: int = ENGINE_LEVELS) -> float:
    """The clock at which paths of `levels` LUT levels plausibly close on `part`'s family."""
    return _REFERENCE_MHZ[family(part)] * _REFERENCE_LEVELS / max(levels, 1)


def engine_clocked(board: Board) -> Board:
    """`board` at the clock the engine is credited with: the board's own, or what the engine's
    paths reach on its family when the board asks for more."""
    reachable = reachable_mhz(board.part)
    return board if board.clock_mhz <= reachable else replace(board, clock_mhz=reachable)


def clock_note(board: Board, clocked: Board) -> str | None:
    """What to tell the user when the engine's clock is below the board's, else None."""
    if clocked.clock_mhz >= board.clock_mhz:
        return None
    return (
        f"board {board.name} asks for {board.clock_mhz:g} MHz, but the engine's paths ({ENGINE_LEVELS} LUT levels) "
        f"plausibly reach {clocked.clock_mhz:g} MHz on {family(board.part)} ({board.part}); "
        f"estimates and the HLS clock target use {clocked.clock_mhz:g} MHz"
    )
