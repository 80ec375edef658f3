"""The RTL back end under Yosys: designs with sequential stages synthesize without latches, with
one DSP48E2 a PE that holds an output and the cost model's estimate beside the figures."""

from __future__ import annotations

import json

import pytest
from designs import mlp_design
from library_module import LEAST_PES, PE_SOURCES, STACKED_PE, synthesized_cells

from fpgagen.manifest import read_manifest
from fpgagen.schedule.resources import least_pe_alone_luts


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
    # one DSP48E2 a PE that holds an output, as the cost model counts them: synthesis removes the
    # others' (sequential_middle's last stage has 16 PEs for 5 outputs)
    stages = read_manifest(outdir)["engine"]["stages"]
    assert report["dsp"] == sum(stage["logic"]["multipliers"] for stage in stages) == report["estimate"]["dsp"]
    assert report["lut"] > 0 and report["ff"] > 0
    assert set(report["estimate"]) >= {"dsp", "bram", "lut", "ff"}


def test_stacked_banks_take_one_block_ram_where_two_banks_take_two(tmp_path):
    """A PE's two banks (docs/engine.md, "Stacked banks"), each a memory of its own, are two
    RAMB18s; stacked, one."""
    variants = [STACKED_PE | {"STACKED": stacked} for stacked in (0, 1)]
    cells = {"ramb18": "t:RAMB18E2", "ramb36": "t:RAMB36E2"}
    split, stacked = synthesized_cells(tmp_path, "fg_pe", PE_SOURCES, variants, cells)
    assert split == {"ramb18": 2, "ramb36": 0} and stacked == {"ramb18": 1, "ramb36": 0}


@pytest.mark.parametrize("sum_bits", [16, 22, 32])
def test_the_roofline_prices_its_least_pe_as_yosys_counts_it(sum_bits, tmp_path):
    """least_pe_alone_luts is at most what Yosys counts for that PE (so the roofline stays a bound)
    and within 2 LUTs of it: the one-cycle PE of a layer without a multiplier, and the pipelined
    one of a layer with 8-bit weights. Each PE is synthesized in a Yosys run of its own: a second
    run of the same PE in one session may map it to more LUTs."""
    cells = {"lut": "t:LUT*", "lutram": "t:RAM32M16 t:RAM64M8"}
    for name, (parameters, encoding) in LEAST_PES.items():
        folder = tmp_path / name
        folder.mkdir()
        [counted] = synthesized_cells(folder, "fg_pe", PE_SOURCES, [parameters | {"SUM_W": sum_bits}], cells)
        luts = counted["lut"] + 8 * counted["lutram"]  # 8 LUTs a RAM32M16 or RAM64M8
        priced = least_pe_alone_luts(sum_bits, encoding)
        assert luts - 2 <= priced <= luts, f"{name}: priced {priced}, Yosys {luts}"
