"""RTL efficiency and cost-model accuracy on Graph Challenge layers.

Compiles 8 layers of the 1024-neuron Graph Challenge network with 8 and 16 PEs, all-dataflow and
all-sequential, calibrated on the same images it then simulates (so the cost model sees the same
activations), simulates under Verilator, and prints per layer: the lower bound (useful MACs / P,
or for sequential layers the weight bytes / the port's bytes per cycle), the measured busy cycles,
the efficiency (bound / measured, target >= 0.8) and the cost model's error (target within 10%).
Writes bench/results/rtl.json. Run: python bench/bench_rtl.py [--simulator icarus] [--images N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from fpgagen.cli import app
from fpgagen.examples.graphchallenge import draw_images, network
from fpgagen.frontend.onnx_writer import write_onnx
from fpgagen.performance import layer_performance

HERE = Path(__file__).parent
CONFIGS = [("dataflow", 8), ("dataflow", 16), ("sequential", 8), ("sequential", 16)]
EFFICIENCY_TARGET, ERROR_TARGET = 0.8, 0.10


def fpgagen(*args) -> None:
    result = CliRunner().invoke(app, [str(a) for a in args])
    if result.exit_code != 0:
        sys.exit(f"fpgagen {' '.join(map(str, args))} failed: {result.stderr}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulator", default="verilator", choices=["verilator", "icarus"])
    parser.add_argument("--images", type=int, default=32)
    parser.add_argument("--layers", type=int, default=8)
    options = parser.parse_args()

    work = HERE / "work" / "rtl"
    work.mkdir(parents=True, exist_ok=True)
    write_onnx(network(1024, options.layers), work / "gc1024.onnx")
    images = draw_images(1024, options.images, np.random.default_rng(7)).toarray().astype(np.float32)
    np.save(work / "images.npy", images)

    report, failures = [], []
    for policy, pes in CONFIGS:
        outdir = work / f"{policy}_{pes}"
        started = time.perf_counter()
        fpgagen("compile", work / "gc1024.onnx", "-o", outdir, "--schedule", policy, "--pes", pes,
                "--calib", work / "images.npy", "--vectors", options.images)  # fmt: skip
        fpgagen("sim", outdir, "--simulator", options.simulator)
        seconds = time.perf_counter() - started
        layers = layer_performance(outdir)
        print(f"\n{policy}, {pes} PEs ({seconds:.0f} s, {options.simulator})")
        print(
            f"{'layer':6} {'bound':>8} {'measured':>9} {'eff':>6} {'estimate':>9} {'error':>7} {'drain':>6} {'est':>6}"
        )
        for layer in layers:
            print(
                f"{layer.name:6} {layer.bound:8.0f} {layer.measured:9.0f} {layer.efficiency:6.3f} "
                f"{layer.estimated:9.0f} {layer.estimate_error:+7.1%} {layer.drain_measured:6.0f} {layer.drain_estimated:6.0f}"
            )
            if layer.efficiency < EFFICIENCY_TARGET:
                failures.append(f"{policy}/{pes} {layer.name}: efficiency {layer.efficiency:.3f}")
            if abs(layer.estimate_error) > ERROR_TARGET or abs(layer.drain_error) > ERROR_TARGET:
                failures.append(f"{policy}/{pes} {layer.name}: estimate off by {layer.estimate_error:+.1%}")
        report.append({"policy": policy, "pes": pes, "seconds": seconds, "layers": [l.to_dict() for l in layers]})

    results = HERE / "results" / "rtl.json"
    results.parent.mkdir(exist_ok=True)
    results.write_text(json.dumps({"simulator": options.simulator, "images": options.images, "runs": report},
                                  indent=2) + "\n")  # fmt: skip
    efficiencies = [layer["efficiency"] for run in report for layer in run["layers"]]
    errors = [abs(layer["estimate_error"]) for run in report for layer in run["layers"]]
    print(
        f"\nefficiency: min {min(efficiencies):.3f}, mean {np.mean(efficiencies):.3f} (target >= {EFFICIENCY_TARGET})"
    )
    print(f"cost model: worst error {max(errors):.1%} (target <= {ERROR_TARGET:.0%}); wrote {results}")
    for failure in failures:
        print("FAIL", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
