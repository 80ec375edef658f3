"""Logic depth (LUT levels per path) of the designs the scheduler produces, from Yosys netlists.

Synthesizes, one design at a time (`fpgagen synth`'s `synth_xilinx -family xcup -flatten`), the
3-layer Graph Challenge 1024 network compiled with `--schedule dataflow` and `--pes 64`, 40 (the
P of most of GC 1024 x 120's stages on the U280) and 16, and `--schedule sequential --pes 16`
(calibrated on stroke images),
a pruned MLP whose first layer the scheduler gives 128 PEs (`wide_128`), and the pruned MLPs of
the tests (tests/designs.py), and prints per design the worst path's LUT
levels, its start and end with their Verilog source lines, its carry chain, the worst path per
Verilog file, and the seconds of synthesis and of the analysis (fpgagen/timing.py; counting rules
in docs/engine.md). The target is issue 10's: at most 6 LUT levels on every path. Only the worst
path is a figure of the design: ABC re-maps paths with slack for area, so the per-file figures
below it can shrink once it is fixed.

Records are merged into bench/results/timing.json under the design's name.

    python bench/bench_timing.py                     # all designs, about an hour (P=64: 35-45 minutes)
    python bench/bench_timing.py --only gc_dataflow_16 dataflow_only
    python bench/bench_timing.py --outdirs OUTDIR...  # existing fpgagen output folders
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from recording import machine, merge_record, now

from fpgagen.cli import app
from fpgagen.examples.graphchallenge import draw_images, network
from fpgagen.frontend.onnx_writer import write_onnx
from fpgagen.manifest import read_manifest
from fpgagen.synth import run_synthesis

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from designs import MLPS, NONE, RELU, mlp_design, pruned_mlp

RESULTS = HERE / "results" / "timing.json"
TARGET_LEVELS = 6  # issue 10: timing-clean at the board clock
# (policy, P); 40 is the P of most of GC 1024 x 120's stages on the U280
GC_CONFIGS = [("dataflow", 64), ("dataflow", 40), ("dataflow", 16), ("sequential", 16)]


def gc_design(work: Path, policy: str, pes: int) -> Path:
    """Graph Challenge 1024 x 3 layers, compiled by `fpgagen compile` as a user would."""
    model, images = work / "gc1024x3.onnx", work / "images.npy"
    if not model.is_file():
        write_onnx(network(1024, 3), model)
        np.save(images, draw_images(1024, 8, np.random.default_rng(1)).toarray().astype(np.float32))
    outdir = work / f"gc_{policy}_{pes}"
    shutil.rmtree(outdir, ignore_errors=True)
    args = ["compile", model, "-o", outdir, "--schedule", policy, "--pes", pes, "--calib", images, "--vectors", 2]
    result = CliRunner().invoke(app, [str(a) for a in args])
    if result.exit_code != 0:
        sys.exit(f"fpgagen {' '.join(map(str, args))} failed: {result.stderr}")
    return outdir


def wide_design(work: Path) -> Path:
    """A pruned MLP 128 x 512 x 16 at 30% density, compiled for the U280 as a user would: its first
    layer's rows (about 150 nonzeros) keep 64 PEs its bottleneck, so the scheduler gives it 128."""
    model, calib = work / "wide.onnx", work / "wide_calib.npy"
    write_onnx(pruned_mlp("wide", [128, 512, 16], [RELU, NONE], seed=21, density=0.3), model)
    np.save(calib, np.maximum(np.random.default_rng(21).standard_normal((8, 128)), 0).astype(np.float32))
    outdir = _fresh(work / "wide_128")
    args = ["compile", model, "-o", outdir, "--calib", calib, "--vectors", 2]
    result = CliRunner().invoke(app, [str(a) for a in args])
    if result.exit_code != 0:
        sys.exit(f"fpgagen {' '.join(map(str, args))} failed: {result.stderr}")
    pes = read_manifest(outdir)["schedule"]["stages"][0]["pes"]
    if pes != 128:
        sys.exit(f"the scheduler gave wide's first layer {pes} PEs, not the 128 this design is to measure")
    return outdir


def designs(work: Path, only: list[str] | None) -> list[tuple[str, object]]:
    """(name, a function that compiles the design and returns its folder), in the order run."""
    builders = [(f"gc_{policy}_{pes}", lambda p=policy, n=pes: gc_design(work, p, n)) for policy, pes in GC_CONFIGS]
    builders.append(("wide_128", lambda: wide_design(work)))
    for case in MLPS:
        builders.append((case, lambda c=case: mlp_design(c, _fresh(work / c), count=2)))
    chosen = [(name, build) for name, build in builders if not only or name in only]
    unknown = set(only or ()) - {name for name, _ in builders}
    if unknown:
        sys.exit(f"unknown design(s) {', '.join(sorted(unknown))}; known: {', '.join(n for n, _ in builders)}")
    return chosen


def _fresh(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    return folder


def measure(name: str, outdir: Path) -> dict:
    started = time.perf_counter()
    synth = run_synthesis(outdir)
    total = time.perf_counter() - started
    depth = synth.logic_levels
    stages = read_manifest(outdir)["schedule"]["stages"]
    record = {
        "design": name,
        "outdir": str(outdir),
        "schedule": [{"mode": s["mode"], "layers": s["layers"], "pes": s["pes"], "units": s["units"]} for s in stages],
        "levels": depth.levels,
        "meets_target": depth.levels <= TARGET_LEVELS,
        "target_levels": TARGET_LEVELS,
        "logic_levels": depth.to_json(),
        "resources": synth.resources(),
        "yosys_seconds": synth.seconds,
        "analysis_seconds": total - synth.seconds,
        "tool": synth.tool,
        "machine": machine(),
        "when": now(),
    }
    merge_record(RESULTS, name, record)
    return record


def show(record: dict) -> None:
    depth = record["logic_levels"]
    chain = depth["carry_chain"]
    modes = ", ".join(f"{s['mode']} P={s['pes']} K={s.get('units', 1)}" for s in record["schedule"])
    verdict = "meets" if record["meets_target"] else "MISSES"
    print(f"{record['design']} ({modes}): {depth['levels']} LUT levels, {verdict} <= {TARGET_LEVELS}; "
          f"Yosys {record['yosys_seconds']:.0f} s, analysis {record['analysis_seconds']:.1f} s")  # fmt: skip
    for role in ("start", "end"):
        point = depth[role]
        print(f"  {role:5} {point['cell']} [{point['type']}.{point['pin']}] {', '.join(point['source'])}")
    if chain["cells"]:
        print(f"  carry chain on it: {chain['cells']} x {chain['type']} ({chain['bits']} bits)")
    if depth["dsp_crossings"]:
        print(f"  combinational DSP48E2 crossings on it: {depth['dsp_crossings']}")
    print("  endpoints by levels: " + ", ".join(f"{k}: {v}" for k, v in depth["histogram"].items()))
    for source, worst in depth["worst_by_file"].items():
        print(f"  {worst['levels']:3} into {source}: {worst['start']['cell']} -> {worst['end']['cell']} "
              f"[{worst['end']['type']}.{worst['end']['pin']}] {', '.join(worst['end']['source'])}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="DESIGN", help="run only these designs (names as printed)")
    parser.add_argument("--outdirs", nargs="+", type=Path, metavar="OUTDIR", help="measure these fpgagen outputs")
    args = parser.parse_args()
    work = HERE / "work" / "timing"
    work.mkdir(parents=True, exist_ok=True)
    if args.outdirs:
        jobs = [(outdir.resolve().name, lambda o=outdir: o) for outdir in args.outdirs]
    else:
        jobs = designs(work, args.only)
    missed = []
    for name, build in jobs:
        record = measure(name, build())
        show(record)
        if not record["meets_target"]:
            missed.append(f"{name}: {record['levels']} levels")
    print(f"wrote {RESULTS}")
    for miss in missed:
        print(f"MISSES the {TARGET_LEVELS}-level target: {miss}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
