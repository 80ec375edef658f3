"""Designs shared by the back-end tests: the HLS and the RTL test the same engines."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import numpy as np
from plan_checks import check_design_follows_plan

from fpgagen.compile import write_design
from fpgagen.ir import Activation, Layer, Model, Schedule, Stage, sparse_weights
from fpgagen.manifest import read_manifest
from fpgagen.numerics import parse_precision
from fpgagen.passes.quantize import quantize
from fpgagen.passes.relabel import relabel
from fpgagen.schedule.apply import apply_schedule
from fpgagen.schedule.boards import load_board
from fpgagen.simulate import verilator_on_path
from fpgagen.vectors import default_inputs

RELU, CLIP, NONE = Activation(0.0, np.inf), Activation(-0.5, 1.5), Activation()
FLOOR = Activation(0.25, 2.0)  # no output is ever zero, padding lanes included


def df(
    layer: int, pes: int, units: int = 1, weights: str = "bram", private: bool = False, drain_lanes: int | None = None
) -> Stage:
    """A dataflow stage; `weights` "uram": in UltraRAM, filled by the load phase; `private`: each
    unit with P PEs of its own; its drain taking `drain_lanes` a cycle (None: P)."""
    return Stage("dataflow", (layer,), pes, weights, units, private=private, drain_lanes=drain_lanes)


def seq(layers: tuple[int, ...], pes: int, channels: int = 1) -> Stage:
    """A sequential stage, its beats striped over `channels` memory channels."""
    return Stage("sequential", layers, pes, "offchip", channels=channels)


def pruned_mlp(
    name: str,
    sizes: list[int],
    activations: list[Activation],
    seed: int,
    density: float = 0.3,
    shared: tuple[float | tuple[float, ...] | None, ...] = (),
    quiet: bool = False,
) -> Model:
    """A random pruned MLP; every layer has an input none of whose weights survive (an all-zero
    row) and an output with no weights (an all-zero column), whose value is then its activated bias.
    Layer i's nonzeros all equal `shared[i]` where that is a number (a positions-only layer), or are
    drawn from it where it is a tuple (a codebook layer). `quiet`: every bias negative, so a ReLU
    layer's outputs are all zero without input (as Graph Challenge's are)."""
    rng = np.random.default_rng(seed)
    layers = []
    for index, (n_in, n_out) in enumerate(itertools.pairwise(sizes)):
        values = rng.standard_normal((n_in, n_out))
        chosen = shared[index] if index < len(shared) else None
        if isinstance(chosen, tuple):
            values = rng.choice(chosen, (n_in, n_out))
        elif chosen is not None:
            values = np.full((n_in, n_out), chosen)
        weights = values * (rng.random((n_in, n_out)) < density)
        weights[rng.integers(n_in), :] = 0.0
        empty_output = rng.integers(n_out)
        weights[:, empty_output] = 0.0
        bias = rng.uniform(-0.5, -0.05, n_out) if quiet else rng.uniform(-0.5, 0.5, n_out)
        bias[empty_output] = -0.25 if quiet else 0.75
        layers.append(Layer(f"fc{index}", f"fc{index}", sparse_weights(weights), bias, activations[index]))
    return Model(name, tuple(layers), "x", "y", (sizes[0],))


def scheduled(model: Model, precision: str, stages: tuple[Stage, ...], in_lanes: int, calib=None) -> Model:
    quantized = quantize(model, parse_precision(precision), calib)
    schedule = Schedule(stages, in_lanes, "u280", 300.0, "auto", "throughput")
    return relabel(apply_schedule(quantized, schedule))  # as `fpgagen compile` leaves it


def compile_design(model: Model, outdir: Path, inputs: np.ndarray) -> Path:
    """What `fpgagen compile` leaves: hls/, rtl/, the weight images, vectors/ and the manifest;
    checked to be its engine plan, as every design the tests build."""
    write_design(model, load_board("u280"), outdir, inputs)
    check_design_follows_plan(outdir, model)
    return outdir


# -- pruned MLPs: shapes, schedules, precisions, lane counts ---------------------------------------

MLPS = {
    # dataflow only, P = 1, 2, 64 (a 1024-bit output stream) with 1, 2 and 2 issue units, 4 input
    # lanes; the middle layer's weights share five values: a 3-bit index into a codebook; the first
    # two stages' weights in UltraRAM: a load chain of two links, rows of 15 and 18 bits
    "dataflow_only": (
        [37, 50, 23, 11],
        [RELU, CLIP, NONE],
        "w8a16",
        (df(0, 1, weights="uram"), df(1, 2, 2, weights="uram"), df(2, 64, 2)),
        4,
        (None, (-0.5, -0.25, 0.125, 0.375, 0.75)),
    ),
    # sequential only, one stage of P = 16 with 32-bit slots, its 512-bit beats striped over two
    # 256-bit AXI ports, K = 16
    "sequential_only": ([100, 64, 30], [RELU, NONE], "w16a16", (seq((0, 1), 16, channels=2),), 16),
    # a sequential stage in the middle, the last stage dataflow with its weights in UltraRAM, four
    # copies of them (K = 4): the load port is weights1, after the sequential stage's; K = 1
    "sequential_middle": (
        [13, 29, 31, 7, 5],
        [RELU, RELU, CLIP, NONE],
        "w8a16",
        (df(0, 2, 2), seq((1, 2), 8), df(3, 16, 4, weights="uram")),
        1,
    ),
    # a sequential stage at the end with one lane
    "sequential_end": ([64, 200, 10, 3], [FLOOR, RELU, NONE], "w16a16", (df(0, 16, 4), df(1, 4, 2), seq((2,), 1)), 4),
    # a sequential stage first, then dataflow with P = 8
    "sequential_first": ([257, 33, 65, 17], [RELU, FLOOR, NONE], "w8a16", (seq((0, 1), 2), df(2, 8, 2)), 16),
    # 4-bit weights and 8-bit activations: accumulators narrower than a product, in both modes; the
    # first layer's weights share three values (a 2-bit codebook index); the sequential stage's 32
    # PEs take 8-bit off-chip slots, 256-bit beats striped over two 128-bit ports, a beat of its
    # tables in 4 beats
    "narrow_w4a8": (
        [48, 70, 20, 6],
        [RELU, CLIP, NONE],
        "w4a8",
        (df(0, 8), seq((1,), 32, channels=2), df(2, 2)),
        16,
        ((-0.5, 0.25, 0.75),),
    ),
    # every nonzero of a layer alike: positions only, the PEs multiplying by 3 * 2^k, the drain
    # subtracting 2^k times the sum; the sequential stage's two layers share 0.375: its off-chip
    # slots are positions only too (8 bits on a 32-bit port), its PEs multiply by the constant; the
    # second stage has 24 PEs, no power of two: its serializers add positions to a word's first index
    "positions_only": (
        [40, 64, 48, 30, 10],
        [RELU, CLIP, RELU, NONE],
        "w8a16",
        (df(0, 4, 2), df(1, 24, 4), seq((2, 3), 4)),
        16,
        (0.375, -0.125, 0.375, 0.375),
    ),
    # stacked banks (both of a PE's banks in one block RAM, the drain reading in the MAC pipeline's
    # slots): the first stage's 150 outputs on one PE (a bias per output: its ROM read a cycle
    # later), and the last, dense, stage's 300 outputs on two PEs with two issue units
    "stacked_banks": ([24, 150, 40, 300], [RELU, CLIP, NONE], "w8a16", (df(0, 1), df(1, 4, 2), df(2, 2, 2)), 4),
    # private PEs (each issue unit with P PEs of its own, no FIFOs, the drain adding the units' sums):
    # K = 1, 2 and 4, the second stage's weights in UltraRAM and shared by a codebook, the last
    # stage dense; the third positions only
    "private_pes": (
        [40, 48, 36, 30, 9],
        [RELU, CLIP, RELU, NONE],
        "w8a16",
        (
            df(0, 8, 1, private=True),
            df(1, 4, 2, weights="uram", private=True),
            df(2, 8, 4, private=True),
            df(3, 4, 2, private=True),
        ),
        4,
        (None, (-0.5, -0.25, 0.125, 0.375, 0.75), 0.25),
    ),
    # drain lanes (the drain reading groups of PEs in turn, fewer requantizers): K = 1 shared with
    # 2 of 8 lanes a cycle, K = 2 private with 4 of 16, K = 4 private with 4 of 32 (8 steps, 36
    # outputs: rows past the last output); quiet layers (negative biases, ReLU) and every third
    # input vector zero, so that vectors reach stages without an entry and drain end words alone;
    # the last stage dense, all P at once
    "drain_lanes": (
        [40, 64, 48, 36, 9],
        [RELU, RELU, RELU, NONE],
        "w8a16",
        (
            df(0, 8, 1, drain_lanes=2),
            df(1, 16, 2, private=True, drain_lanes=4),
            df(2, 32, 4, private=True, drain_lanes=4),
            df(3, 4, 2),
        ),
        4,
        (),
    ),
    # the widest stage the engine builds: 128 PEs for each of two units (256, fg_all's limit), the
    # drain taking 64 lanes, so each unit's words hold 32 values (MAX_WORD_VALUES); 200 outputs on
    # two local addresses
    "private_128": ([24, 200, 9], [RELU, NONE], "w8a16", (df(0, 128, 2, private=True, drain_lanes=64), df(1, 8, 2)), 8),
}
QUIET_MLPS = {"drain_lanes"}  # negative biases, and every third test vector zero


# Small designs for Yosys, which takes minutes on the MLPS above (a sequential stage above all: its
# AXI reader and 64-bit address arithmetic): the kinds of stage of sequential_middle in 44 s of
# synthesis instead of 148, and two dataflow stages in 19 s.
SMALL_MLPS = {
    "small_mixed": (
        [12, 9, 7, 5],
        [RELU, RELU, NONE],
        "w8a16",
        (df(0, 2), seq((1,), 2), df(2, 4, 2, weights="uram")),
        1,
    ),
    "small_dataflow": ([12, 9, 5], [RELU, NONE], "w8a16", (df(0, 2), df(1, 1)), 1),
}


def mlp_model(case: str) -> Model:
    """The quantized, scheduled model of the MLPS or SMALL_MLPS case `case`."""
    sizes, activations, precision, stages, in_lanes, *shared = (MLPS | SMALL_MLPS)[case]
    model = pruned_mlp(
        case, sizes, activations, seed=len(case), shared=shared[0] if shared else (), quiet=case in QUIET_MLPS
    )
    calib = np.random.default_rng(2).uniform(-1, 1, (16, sizes[0]))
    return scheduled(model, precision, stages, in_lanes, calib)


def mlp_design(case: str, outdir: Path, count: int = 12) -> Path:
    """Compile the MLPS or SMALL_MLPS case `case` into `outdir` with `count` test vectors."""
    design = mlp_model(case)
    inputs = default_inputs(design, count=count, seed=1)
    if case in QUIET_MLPS:
        inputs[::3] = 0.0
    return compile_design(design, outdir, inputs)


def lint(outdir: Path) -> None:
    """verilator --lint-only -Wall on the design: no warning at all."""
    verilator_on_path()
    manifest = read_manifest(outdir)
    rtl = outdir / "rtl"
    sources = sorted(str(path.name) for path in rtl.glob("*.v"))
    done = subprocess.run(
        ["verilator", "--lint-only", "-Wall", "--top-module", manifest["rtl"]["toplevel"], *sources],
        cwd=rtl, capture_output=True, check=False, text=True,
    )  # fmt: skip
    assert done.returncode == 0 and "%Warning" not in done.stderr, done.stderr
