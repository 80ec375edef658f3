"""How far fpgagen's fixed point is from float on random sparse MLPs, by how it was compiled.

Models: random chains from tests/onnx_models.py (every supported ONNX op form), with calibration
and held-out inputs of one distribution (standard normal, 30% zeros). Reference: onnxruntime in
float32, which shares no code with fpgagen. Error: the largest |fixed - float| over every output
of every input, relative to the output range (docs/numerics.md). Configurations, each the
compiler's own choices through the same functions `fpgagen compile` calls:

- w8a16 without --calib (ranges assumed from inputs in [-1, 1]; the default before issue 12),
- w8a16 with --calib,
- --max-error 0.01 with --calib (per-layer formats), with the format cost (weight and accumulator
  storage bits) against uniform w16a16 and the search time.

On held-out inputs the error is relative to the output range on the calibration inputs (the range
the design was made for); for --max-error also relative to the held-out outputs' own range.

Results are merged into bench/results/numerics.json under a key naming the run.

    python bench/bench_numerics.py                  # 50 models, 256 calibration and 256 held-out rows
    python bench/bench_numerics.py --models 200 --rows 1000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from recording import machine, merge_record, now

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from onnx_models import onnxruntime_outputs, random_chain, random_inputs

from fpgagen.accuracy import output_scale
from fpgagen.errors import FpgagenError
from fpgagen.frontend import read_onnx
from fpgagen.golden import GoldenModel, flatten_inputs
from fpgagen.numerics import parse_precision
from fpgagen.passes.formats import choose_formats, format_cost
from fpgagen.passes.quantize import quantize

RESULTS = Path(__file__).resolve().parent / "results" / "numerics.json"


def error(model_q, path: Path, inputs: np.ndarray, scale: float | None = None) -> float:
    """Against onnxruntime, relative to `scale`, by default the range of these outputs."""
    reference = onnxruntime_outputs(path, inputs).astype(np.float64)
    got = GoldenModel(model_q).predict(flatten_inputs(model_q, inputs))
    return float(np.max(np.abs(got - reference)) / (scale or output_scale(reference)))


def summary(values: list[float]) -> dict:
    array = np.array(values)
    return {
        "median": float(np.median(array)),
        "p90": float(np.percentile(array, 90)),
        "max": float(array.max()),
        "over_1pct": int(np.count_nonzero(array > 0.01)),
        "over_2pct": int(np.count_nonzero(array > 0.02)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--rows", type=int, default=256, help="calibration rows, and as many held-out rows")
    parser.add_argument("--max-error", type=float, default=0.01)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    columns = {name: [] for name in ("assumed_calib", "assumed_held", "calib_calib", "calib_held")}
    columns |= {"bound_calib": [], "bound_held": [], "bound_held_own": [], "cost_ratio": [], "search_s": []}
    goals = []
    unreachable = []
    w8a16, w16a16 = parse_precision("w8a16"), parse_precision("w16a16")
    with tempfile.TemporaryDirectory() as folder:
        for seed in range(args.models):
            chain = random_chain(seed)
            path = Path(folder) / f"{seed}.onnx"
            onnx.save(chain.model, path)
            rng = np.random.default_rng(seed + 500)
            calib = random_inputs(rng, args.rows, chain.inputs.shape[1:])
            held = random_inputs(rng, args.rows, chain.inputs.shape[1:])
            model = read_onnx(path)
            x = flatten_inputs(model, calib)
            scale = output_scale(onnxruntime_outputs(path, calib).astype(np.float64))
            assumed, calibrated = quantize(model, w8a16), quantize(model, w8a16, x)
            columns["assumed_calib"].append(error(assumed, path, calib))
            columns["assumed_held"].append(error(assumed, path, held, scale))
            columns["calib_calib"].append(error(calibrated, path, calib))
            columns["calib_held"].append(error(calibrated, path, held, scale))
            started = time.perf_counter()
            try:
                choice = choose_formats(model, x, args.max_error)
            except FpgagenError as exc:  # an unreachable bound is a result too
                unreachable.append({"seed": seed, "message": str(exc)})
                continue
            columns["search_s"].append(time.perf_counter() - started)
            columns["bound_calib"].append(error(choice.model, path, calib))
            columns["bound_held"].append(error(choice.model, path, held, scale))
            columns["bound_held_own"].append(error(choice.model, path, held))
            goals.append(choice.goal < args.max_error)
            columns["cost_ratio"].append(format_cost(choice.model) / format_cost(quantize(model, w16a16, x)))

    record = {
        "models": args.models,
        "rows": args.rows,
        "max_error": args.max_error,
        "w8a16_assumed_ranges": {
            "calibration": summary(columns["assumed_calib"]),
            "held_out": summary(columns["assumed_held"]),
        },
        "w8a16_calibrated": {
            "calibration": summary(columns["calib_calib"]),
            "held_out": summary(columns["calib_held"]),
        },
        "max_error_formats": {
            "designs": len(columns["bound_calib"]),
            "calibration": summary(columns["bound_calib"]),
            "held_out": summary(columns["bound_held"]),
            "held_out_own_range": summary(columns["bound_held_own"]),
            "kept_reserve": int(np.count_nonzero(goals)),
            "cost_vs_w16a16": {
                "median": float(np.median(columns["cost_ratio"])),
                "max": float(np.max(columns["cost_ratio"])),
            },
            "search_seconds": {
                "median": float(np.median(columns["search_s"])),
                "max": float(np.max(columns["search_s"])),
            },
            "unreachable": unreachable,
        },
        "machine": machine(),
        "when": now(),
    }
    key = f"random-mlps-{args.models}-rows{args.rows}-e{args.max_error:g}"
    merge_record(args.out, key, record)

    def line(values: dict) -> str:
        return f"median {values['median']:.2%}, p90 {values['p90']:.2%}, max {values['max']:.2%} (> 2%: {values['over_2pct']})"

    print(f"{key}: error relative to the output range, against onnxruntime float32")
    for name, entry in (("w8a16, ranges assumed", "w8a16_assumed_ranges"), ("w8a16, --calib", "w8a16_calibrated")):
        print(f"  {name:<28} calibration {line(record[entry]['calibration'])}")
        print(f"  {'':<28} held-out    {line(record[entry]['held_out'])}")
    bound = record["max_error_formats"]
    print(f"  --max-error {args.max_error:g} ({bound['designs']} designs, {len(unreachable)} unreachable)")
    print(f"  {'':<28} calibration {line(bound['calibration'])}")
    print(f"  {'':<28} held-out    {line(bound['held_out'])}")
    print(f"  {'':<28} (own range) {line(bound['held_out_own_range'])}")
    print(f"  the search kept its reserve in {bound['kept_reserve']} of {bound['designs']} designs")
    print(
        f"  format cost / uniform w16a16: median {bound['cost_vs_w16a16']['median']:.2f}, max "
        f"{bound['cost_vs_w16a16']['max']:.2f}; search {bound['search_seconds']['median']:.2f} s median, "
        f"{bound['search_seconds']['max']:.2f} s max"
    )
    print(f"  wrote {args.out}")


if __name__ == "__main__":
    main()
