"""The RTL back end under Yosys: designs with sequential stages synthesize without latches, with
one DSP48E2 per lane and the cost model's estimate beside the figures."""

from __future__ import annotations

import json

import pytest
from designs import mlp_design

from fpgagen.manifest import read_manifest


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
