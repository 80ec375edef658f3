"""The clock a design is credited with (fpgagen.engine.clock)."""

from dataclasses import replace

import pytest

from fpgagen.engine.clock import (
    ENGINE_LEVELS,
    SEVEN_SERIES,
    ULTRASCALE_PLUS,
    clock_note,
    engine_clocked,
    family,
    reachable_mhz,
)
from fpgagen.schedule.boards import builtin_boards, load_board


@pytest.mark.parametrize(
    "part, expected",
    [
        ("xcu280-fsvh2892-2L-e", ULTRASCALE_PLUS),
        ("xczu7ev-ffvc1156-2-e", ULTRASCALE_PLUS),
        ("xcvu9p-flga2104-2L-e", ULTRASCALE_PLUS),
        ("xc7z020clg400-1", SEVEN_SERIES),
        ("xcku040-ffva1156-2-e", SEVEN_SERIES),  # UltraScale without the plus: not credited as one
        ("lab-part-1", SEVEN_SERIES),
    ],
)
def test_the_family_of_a_part(part, expected):
    assert family(part) == expected


def test_six_levels_meet_300_mhz_on_ultrascale_plus_and_deeper_paths_less():
    assert reachable_mhz("xcu280-fsvh2892-2L-e", 6) == pytest.approx(300.0)
    assert reachable_mhz("xcu280-fsvh2892-2L-e", 12) == pytest.approx(150.0)
    assert reachable_mhz("xc7z020clg400-1", 6) == pytest.approx(200.0)


@pytest.mark.parametrize("name", builtin_boards())
def test_every_builtin_board_clock_is_met_by_the_engine(name):
    board = load_board(name)
    assert engine_clocked(board) is board
    assert clock_note(board, engine_clocked(board)) is None


def test_a_board_asking_for_more_than_the_engine_reaches_is_scheduled_at_what_it_reaches():
    fast = replace(load_board("u280"), name="lab-card", clock_mhz=450.0)
    clocked = engine_clocked(fast)
    assert clocked.clock_mhz == pytest.approx(reachable_mhz(fast.part, ENGINE_LEVELS))
    assert clocked.clock_mhz < 450.0
    assert clocked.bytes_per_cycle > fast.bytes_per_cycle  # the memory gives more per slower cycle
    note = clock_note(fast, clocked)
    assert "lab-card asks for 450 MHz" in note and "300 MHz" in note
