"""Benchmark the scheduler: automatic dataflow/sequential mixes against the two pure styles.

For each model and board: the estimated throughput of `auto`, all-dataflow and all-sequential
(each with its own best PEs, throughput objective), in steady state and over one batch of 1024
vectors with its latency and its load phase (`per batch`), each one's share of the board's roofline,
and the time the scheduler took; then `auto` with the latency objective, its latency and time.
Asserts that auto's slowest stage is never slower than the better pure style's (the bottleneck,
which the scheduler minimizes), that the latency objective's design is never slower to the first
result than the throughput objective's as its search counts latency (each stage's latency or its
load of weights into UltraRAM, whichever is longer; the estimate overlaps each load with the
stages before it, and where that makes the throughput design the sooner one it prints both), unless the solver's time limit left
either unproven (then it prints the figures), and that no design is over a resource. Writes bench/results/schedule.json and prints a table.

Models:
- Graph Challenge 1024 x 120 and 4096 x 120 (fpgagen.examples.graphchallenge), calibrated on
  its generated images;
- InTAR's FFN 256-1024-2048-256 and gating net 4096-11008-4096, with random normal weights
  magnitude-pruned to 90% per layer (fpgagen.passes.prune), ReLU between layers, calibrated on
  random normal inputs;
- a chain whose widths vary by 16x, 4096-256-4096-256-4096, built the same way.

Run: python bench/bench_schedule.py [--quick]   (--quick: Graph Challenge 1024 x 120 only)
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from fpgagen.atomic import atomic_file
from fpgagen.engine.plan import layer_shape
from fpgagen.errors import FpgagenError
from fpgagen.examples.graphchallenge import draw_images, network
from fpgagen.ir import DATAFLOW, SEQUENTIAL, URAM, Activation, Layer, Model, sparse_weights
from fpgagen.numerics import parse_precision
from fpgagen.passes.prune import prune
from fpgagen.passes.quantize import quantize
from fpgagen.schedule.activity import Activity
from fpgagen.schedule.boards import load_board
from fpgagen.schedule.resources import board_budget
from fpgagen.schedule.scheduler import DEFAULT_BATCH, schedule

RESULTS = Path(__file__).parent / "results" / "schedule.json"
BOARDS = ("u280", "pynq-z2")
RUNS = {  # name: (policy, objective)
    "auto": ("auto", "throughput"),
    DATAFLOW: (DATAFLOW, "throughput"),
    SEQUENTIAL: (SEQUENTIAL, "throughput"),
    "auto/latency": ("auto", "latency"),
}
CALIBRATION = 200
SPARSITY = 0.9


@dataclass
class Case:
    name: str
    model: Model  # quantized
    activity: Activity


def graph_challenge(neurons: int, layers: int, rng: np.random.Generator) -> Case:
    model = network(neurons, layers)
    images = draw_images(neurons, CALIBRATION, rng).toarray()
    quantized = quantize(model, parse_precision("w8a16"), images)
    return Case(f"graphchallenge-{neurons}x{layers}", quantized, Activity.from_calibration(quantized, images))


def pruned_chain(name: str, widths: list[int], rng: np.random.Generator) -> Case:
    """Random normal weights, magnitude-pruned per layer, ReLU after every layer but the last."""
    layers = []
    for index, (n_in, n_out) in enumerate(itertools.pairwise(widths)):
        weights = sparse_weights(rng.standard_normal((n_in, n_out), dtype=np.float32) / np.sqrt(n_in))
        activation = Activation(0.0) if index < len(widths) - 2 else Activation()
        layers.append(Layer(f"fc{index}", f"fc{index}", weights, 0.01 * rng.standard_normal(n_out), activation))
    model = prune(Model(name, tuple(layers), "x", "y", (widths[0],)), SPARSITY, "magnitude")
    inputs = rng.standard_normal((CALIBRATION, widths[0]))
    quantized = quantize(model, parse_precision("w8a16"), inputs)
    return Case(name, quantized, Activity.from_calibration(quantized, inputs))


def cases(quick: bool) -> list:
    """Builders, so that one model at a time is in memory."""
    rng = np.random.default_rng(2025)
    builders = [lambda: graph_challenge(1024, 120, rng)]
    if not quick:
        builders += [
            lambda: graph_challenge(4096, 120, rng),
            lambda: pruned_chain("ffn-256-1024-2048-256", [256, 1024, 2048, 256], rng),
            lambda: pruned_chain("gating-4096-11008-4096", [4096, 11008, 4096], rng),
            lambda: pruned_chain("chain-4096-256-4096-256-4096", [4096, 256, 4096, 256, 4096], rng),
        ]
    return builders


def run_case(case: Case, board_name: str) -> dict:
    board = load_board(board_name)
    results = {}
    for run, (policy, objective) in RUNS.items():
        start = time.perf_counter()
        try:
            scheduled = schedule(case.model, board, policy, objective, case.activity)
        except FpgagenError as exc:
            results[run] = {"fits": False, "reason": str(exc), "seconds": time.perf_counter() - start}
            continue
        seconds = time.perf_counter() - start
        estimate = scheduled.schedule.estimate
        stages = scheduled.schedule.stages
        results[run] = {
            "fits": True,
            "policy": policy,
            "objective": objective,
            "seconds": seconds,
            "interval": estimate.interval,
            "bottleneck": estimate.bottleneck,  # the slowest stage's mean interval: what the scheduler minimizes
            "latency": estimate.latency,
            # what the latency objective minimizes (estimates.searched_latency): each stage's
            # latency or load, whichever is longer, a proxy for `latency` (not a bound either way)
            "search_latency": estimate.searched_latency,
            "vectors_per_s": estimate.steady_vectors_per_s,
            "edges_per_s": estimate.steady_vectors_per_s * estimate.edges,
            # Over one batch of DEFAULT_BATCH vectors from its start: the first result's latency,
            # the load phase of the weights in UltraRAM and of the sequential tables included
            # (they run at every batch), then an interval a vector.
            "batch_edges_per_s": estimate.vectors_per_s(DEFAULT_BATCH) * estimate.edges,
            "roofline_vectors_per_s": estimate.roofline.bound,
            "roofline_ratio": estimate.roofline_ratio,
            "resources": estimate.resources.as_dict(),
            "dataflow_stages": sum(stage.mode == DATAFLOW for stage in stages),
            "sequential_stages": sum(stage.mode == SEQUENTIAL for stage in stages),
            "sequential_layers": sum(len(stage.layers) for stage in stages if stage.mode == SEQUENTIAL),
            # the memory channels the sequential stages' beats are striped over, together
            "memory_channels": sum(stage.channels for stage in stages if stage.mode == SEQUENTIAL),
            "pes": sorted({stage.pes for stage in stages}),
            "uram_weight_stages": sum(stage.weight_memory == URAM for stage in stages),
            # dataflow stages whose PEs keep both accumulator banks in one block RAM
            "stacked_stages": sum(
                stage.mode == DATAFLOW and layer_shape(case.model.layers[stage.layers[0]], stage.pes).stacked
                for stage in stages
            ),
            "deep_channels": scheduled.schedule.deep_channels,
            # what the solver's time limit left unproven (fpgagen.schedule.scheduler.PROGRAM_SECONDS)
            "unproven": list(scheduled.schedule.unproven),
            # why no design of a shorter interval exists (scheduler.limit; null for the latency
            # objective): the reader, a layer the engine builds no faster stage for, or the board
            "limit": None if scheduled.schedule.limit is None else asdict(scheduled.schedule.limit),
        }
        assert estimate.resources.fits(board_budget(board)), f"{case.name} {run} on {board_name} is over budget"
        assert estimate.roofline_ratio <= 1.0 + 1e-9, f"{case.name} {run} on {board_name} beats the roofline"
    check_auto(case.name, board_name, results)
    return results


def check_auto(name: str, board: str, results: dict) -> None:
    """Auto fits whenever a pure style does, and its interval is no longer than the better one's;
    the latency objective's design is never slower to the first result than the throughput one's."""
    pure = [results[p]["bottleneck"] for p in (DATAFLOW, SEQUENTIAL) if results[p]["fits"]]
    if not pure:
        return
    auto, fastest = results["auto"], results["auto/latency"]
    assert auto["fits"] and fastest["fits"], f"{name} on {board}: a pure style fits but auto does not"
    # What the solver's time limit left unproven is reported, not asserted.
    if "interval" in auto["unproven"]:
        print(f"{name} on {board}: auto's interval unproven: {auto['bottleneck']:.1f} against {min(pure):.1f}")
    else:
        assert auto["bottleneck"] <= min(pure) * (1 + 1e-9), f"{name} on {board}: auto is worse than a pure style"
    if "latency" in auto["unproven"] + fastest["unproven"]:
        print(f"{name} on {board}: a latency unproven: {fastest['latency']:.1f} against {auto['latency']:.1f}")
        return
    lost = f"{name} on {board}: the latency objective lost"
    assert fastest["search_latency"] <= auto["search_latency"] * (1 + 1e-9), lost
    if fastest["latency"] > auto["latency"]:  # the overlapped loads the search does not see
        print(
            f"{name} on {board}: the throughput design reaches its first result sooner, its loads overlapped: "
            f"{auto['latency']:.1f} against {fastest['latency']:.1f} cycles (searched: {auto['search_latency']:.1f} "
            f"against {fastest['search_latency']:.1f})"
        )


def table(report: dict) -> str:
    header = (
        f"{'model':30} {'board':8} {'run':12} {'vectors/s':>12} {'edges/s':>10} {'per batch':>10} {'roofline':>9} "
        f"{'latency':>11} {'stages (df+seq)':>22} {'time':>7}"
    )
    lines = [header]
    for name, boards in report["models"].items():
        for board, results in boards["boards"].items():
            for run, r in results.items():
                if not r["fits"]:
                    reason = r["reason"].split(";")[0]
                    lines.append(f"{name:30} {board:8} {run:12} does not fit: {reason}")
                    continue
                stages = f"{r['dataflow_stages']}+{r['sequential_stages']} ({r['sequential_layers']} seq, {r['memory_channels']} ch)"
                lines.append(
                    f"{name:30} {board:8} {run:12} {r['vectors_per_s']:12.4g} {r['edges_per_s']:10.3g} {r['batch_edges_per_s']:10.3g} "
                    f"{r['roofline_ratio']:9.2%} {r['latency']:11.4g} {stages:>22} {r['seconds']:6.2f}s"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Graph Challenge 1024 x 120 only")
    quick = parser.parse_args().quick
    report = {"precision": "w8a16", "sparsity": SPARSITY, "models": {}}
    if quick and RESULTS.exists():  # keep the other workloads' figures: --quick replaces its own
        report["models"] = json.loads(RESULTS.read_text())["models"]
    for build in cases(quick):
        start = time.perf_counter()
        case = build()
        prepared = time.perf_counter() - start
        layers = case.model.layers
        report["models"][case.name] = {
            "layers": len(layers),
            "widths": [case.model.in_features, *(layer.out_features for layer in layers)],
            "nnz": case.model.nnz,
            "activity": case.activity.source,
            "mean_activation_density": float(np.mean(np.concatenate(case.activity.probabilities))),
            "prepare_seconds": prepared,
            "boards": {board: run_case(case, board) for board in BOARDS},
        }
        print(f"{case.name}: prepared in {prepared:.1f} s", flush=True)
    with atomic_file(RESULTS) as work:
        work.write_text(json.dumps(report, indent=2, allow_nan=False))
    print(table(report))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
