"""C-simulation throughput of the generated HLS C++ on a Graph Challenge network.

The network (default 1024 neurons x 16 layers) is quantized, scheduled by fpgagen's scheduler,
emitted as HLS C++, built with g++ (the project's Makefile, -O2, the shim headers) and run by its
own testbench on stroke images. The testbench times the whole top function on every vector; the
layer-by-layer checks that come first are not timed. Every output is compared with the golden
model: a rate is only reported for a bit-exact run.

Rate = inputs x nominal edges (N x 32 x L) / seconds of the whole-design run; target >= 5e7 edges/s.
Results are merged into bench/results/csim.json under a key naming the configuration.

    python bench/bench_csim.py                        # 1024 x 16, 2500 inputs
    python bench/bench_csim.py --layers 120 --inputs 500
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from recording import machine, merge_record, now

from fpgagen.backends.hls import run_csim
from fpgagen.compile import write_design
from fpgagen.examples.graphchallenge import draw_images, network
from fpgagen.numerics import DEFAULT_PRECISION, parse_precision
from fpgagen.passes.quantize import quantize
from fpgagen.schedule.boards import load_board
from fpgagen.schedule.scheduler import schedule

RESULTS = Path(__file__).resolve().parent / "results" / "csim.json"
TARGET = 5e7


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--neurons", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--inputs", type=int, default=2500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--precision", default=DEFAULT_PRECISION)
    parser.add_argument("--board", default="u280")
    parser.add_argument("--policy", default="auto")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    model = network(args.neurons, args.layers)
    design = schedule(quantize(model, parse_precision(args.precision)), args.board, args.policy)
    images = draw_images(args.neurons, args.inputs, np.random.default_rng(args.seed)).toarray()
    with tempfile.TemporaryDirectory(prefix="fpgagen-bench-csim-") as folder:
        outdir = Path(folder)
        started = time.perf_counter()
        write_design(design, load_board(args.board), outdir, images)
        write_seconds = time.perf_counter() - started
        result = run_csim(outdir, outdir / "vectors")
    if not result.passed:
        raise SystemExit(f"the C simulation is not bit-exact: {result.mismatch or result.error}")

    edges = model.nnz
    rate = args.inputs * edges / result.seconds
    stages = design.schedule.stages
    record = {
        "neurons": args.neurons,
        "layers": args.layers,
        "inputs": args.inputs,
        "edges": edges,
        "precision": args.precision,
        "board": args.board,
        "policy": args.policy,
        "schedule": [{"mode": s.mode, "layers": list(s.layers), "pes": s.pes} for s in stages],
        "in_lanes": design.schedule.in_lanes,
        "write_seconds": write_seconds,
        "build_seconds": result.build_seconds,
        "run_seconds": result.seconds,
        "edges_per_s": rate,
        "target_edges_per_s": TARGET,
        "meets_target": rate >= TARGET,
        "bit_exact": True,
        "compiler": _compiler(),
        "machine": machine(),
        "when": now(),
    }
    key = f"n{args.neurons}-l{args.layers}-k{args.inputs}-{args.precision}-{args.policy}"
    merge_record(args.out, key, record)

    kinds = Counter(f"{s.mode} P={s.pes}" for s in stages)
    modes = ", ".join(f"{count} {kind}" for kind, count in kinds.items())
    print(f"{key}: {args.inputs} inputs x {edges:,} edges; {len(stages)} stages: {modes}")
    print(
        f"  emit {write_seconds:.2f} s, g++ build {result.build_seconds:.2f} s, whole-design run {result.seconds:.3f} s"
    )
    print(f"  {rate:.3e} edges/s (target {TARGET:.0e}): {'met' if rate >= TARGET else 'NOT met'}; bit-exact")
    print(f"  wrote {args.out}")


def _compiler() -> str:
    version = subprocess.run(["g++", "--version"], capture_output=True, check=False, text=True)
    return version.stdout.splitlines()[0] if version.returncode == 0 else "unknown"


if __name__ == "__main__":
    main()
