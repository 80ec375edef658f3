"""The golden model against the Graph Challenge reference computation, on the same machine and run.

Baseline: scipy.sparse in float32, as the challenge's reference code does it (Y = Y W; the bias
added to the nonzeros; clamp to [0, 32]; drop the zeros; layer after layer). Golden: fpgagen's
fixed-point golden model in the default precision, `GoldenModel(quantize(model, precision)).run(x)`.
Both run single-threaded (scipy's sparse products use one core). Only inference is timed, the
best of a few repetitions, interleaved so that a busy machine slows both alike.

Rate = inputs x edges / seconds, edges = N * 32 * L. Results are merged into
bench/results/golden.json under a key naming the configuration.

    python bench/bench_golden.py                                   # 1024 x 120, 2000 inputs
    python bench/bench_golden.py --neurons 4096 --inputs 500
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
from recording import machine, merge_record, now

from fpgagen.examples.graphchallenge import draw_images, network, reference_categories
from fpgagen.frontend.graphchallenge_tsv import CLIP, categories, default_bias
from fpgagen.golden import GoldenModel
from fpgagen.numerics import DEFAULT_PRECISION, parse_precision
from fpgagen.passes.quantize import quantize

RESULTS = Path(__file__).resolve().parent / "results" / "golden.json"


def baseline(weights: list[sp.csr_array], images: sp.csr_array, bias: np.float32) -> sp.csr_array:
    y = images
    for w in weights:
        y = y @ w
        y.data += bias
        np.clip(y.data, 0.0, CLIP, out=y.data)
        y.eliminate_zeros()
    return y


def timed(run) -> tuple[float, object]:
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--neurons", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=120)
    parser.add_argument("--inputs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--precision", default=DEFAULT_PRECISION)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    model = network(args.neurons, args.layers)
    images = draw_images(args.neurons, args.inputs, np.random.default_rng(args.seed))
    bias = default_bias(args.neurons)
    weights32 = [sp.csr_array(layer.weights, dtype=np.float32) for layer in model.layers]
    images32 = sp.csr_array(images, dtype=np.float32)
    golden = GoldenModel(quantize(model, parse_precision(args.precision)))
    dense_inputs = images.toarray()

    base_times, golden_times = [], []
    for _ in range(args.repeat):
        seconds, base_out = timed(lambda: baseline(weights32, images32, np.float32(bias)))
        base_times.append(seconds)
        seconds, golden_out = timed(lambda: golden.run(dense_inputs)[-1])
        golden_times.append(seconds)

    truth = reference_categories((layer.weights for layer in model.layers), images, bias)
    edges = model.nnz
    work = args.inputs * edges
    base_s, golden_s = min(base_times), min(golden_times)
    record = {
        "neurons": args.neurons,
        "layers": args.layers,
        "inputs": args.inputs,
        "edges": edges,
        "precision": args.precision,
        "repeat": args.repeat,
        "threads": 1,
        "baseline_seconds": base_s,
        "golden_seconds": golden_s,
        "baseline_all_seconds": base_times,
        "golden_all_seconds": golden_times,
        "ratio_golden_over_baseline": golden_s / base_s,
        "baseline_edges_per_s": work / base_s,
        "golden_edges_per_s": work / golden_s,
        "survivors_float64": int(truth.size),
        "baseline_category_mismatches": int(np.setxor1d(categories(base_out), truth).size),
        "golden_category_mismatches": int(np.setxor1d(categories(golden_out), truth).size),
        "machine": machine(),
        "versions": {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__},
        "when": now(),
    }
    key = f"n{args.neurons}-l{args.layers}-k{args.inputs}-{args.precision}"
    merge_record(args.out, key, record)

    print(f"{key}: {args.inputs} inputs x {edges:,} edges, best of {args.repeat}")
    print(f"  baseline scipy float32  {base_s:8.3f} s  {work / base_s:.3e} edges/s")
    print(f"  golden {args.precision:<16} {golden_s:8.3f} s  {work / golden_s:.3e} edges/s")
    print(f"  ratio golden / baseline {golden_s / base_s:.3f}")
    print(
        f"  categories vs float64 truth ({truth.size} survivors): baseline {record['baseline_category_mismatches']} "
        f"differ, golden {record['golden_category_mismatches']} differ"
    )
    print(f"  wrote {args.out}")


if __name__ == "__main__":
    main()
