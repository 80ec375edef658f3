"""The RTL back end under Yosys: designs with sequential stages synthesize without latches, with
one DSP48E2 per lane and the cost model's estimate beside the figures."""

from __future__ import annotations

import json

import pytest
from designs import mlp_design
from library_module import PE_SOURCES, STACKED_PE, synthesized_cells

from fpgagen.manifest import read_manifest


# Yosys takes minutes on the MLPs of test_rtl: the default run synthesizes a small design with their
# kinds of stage (sequential, dataflow from block RAM and from UltraRAM), `-m slow` two of them.
@pytest.mark.parametrize(
    "case",
    ["small_mixed", *(pytest.param(case, marks=pytest.mark.slow) for case in ("sequential_middle", "sequential_end"))],
)
def test_yosys_synthesizes_without_latches(case, tmp_path, run_cli):
    outdir = mlp_design(case, tmp_path / case, count=2)
    result = run_cli("synth", outdir, "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads((outdir / "synth_results.json").read_text())
    assert json.loads(result.stdout) == report
    assert report["latches"] == 0
    stages = read_manifest(outdir)["schedule"]["stages"]
    assert report["dsp"] == sum(stage["pes"] for stage in stages)  # one DSP48E2 per lane
    assert report["lut"] > 0 and report["ff"] > 0
    assert set(report["estimate"]) >= {"dsp", "bram", "lut", "ff"}


def test_stacked_banks_take_one_block_ram_where_two_banks_take_two(tmp_path):
    """A PE's two banks (docs/engine.md, "Stacked banks"), each a memory of its own, are two
    RAMB18s; stacked, one."""
    variants = [STACKED_PE | {"STACKED": stacked} for stacked in (0, 1)]
    cells = {"ramb18": "t:RAMB18E2", "ramb36": "t:RAMB36E2"}
    split, stacked = synthesized_cells(tmp_path, "fg_pe", PE_SOURCES, variants, cells)
    assert split == {"ramb18": 2, "ramb36": 0} and stacked == {"ramb18": 1, "ramb36": 0}
