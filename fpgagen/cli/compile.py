"""`fpgagen compile`: a model file into a design folder (HLS project, RTL, vectors, manifest)."""

from __future__ import annotations

from itertools import groupby
from pathlib import Path

import click
from rich.markup import escape

from ..accuracy import TEST_VECTORS
from ..compile import CompileOptions, CompileSummary, compile_model
from ..numerics import DEFAULT_PRECISION
from ..outdir import DEFAULT_ROOT, default_name, default_output_folder
from ..passes.formats import MAX_PRECISION
from ..prepare import FrontOptions
from ..schedule.boards import builtin_boards
from ..schedule.scheduler import POLICIES
from ..vectors import idle_layers, read_vectors
from . import app
from .common import accuracy_lines, calib_option, err, model_argument, objective_option, out, plural, print_unproven
from .progress import Steps


@app.command(name="compile")
@model_argument
@click.option(
    "-o",
    "--out",
    "outdir",
    type=click.Path(path_type=Path),
    help=f"Output folder: missing, empty or an earlier design [default: {DEFAULT_ROOT}/<model file name>].",
)
@click.option(
    "--board",
    default="u280",
    show_default=True,
    help=f"Built-in board ({', '.join(builtin_boards())}) or a .yaml profile.",
)
@click.option(
    "--precision",
    help=f"Fixed-point widths as wXaY (weights X bits, activations Y bits) [default: {DEFAULT_PRECISION}]; "
    f"with --max-error, the widest widths allowed [default: {MAX_PRECISION.name}].",
)
@click.option(
    "--max-error",
    type=float,
    help="Choose per-layer formats, the cheapest whose largest output error on the --calib inputs is at most "
    "this fraction of the output range (0.01: 1%).",
)
@click.option(
    "--schedule",
    "policy",
    type=click.Choice(POLICIES),
    default="auto",
    show_default=True,
    help="Let the scheduler mix dataflow and sequential stages, or force one style.",
)
@objective_option
@calib_option
@click.option("--pes", type=int, help="Force this many PEs in every stage.")
@click.option("--act-density", type=float, help="Assumed fraction of nonzero activations (without --calib: 1.0).")
@click.option(
    "--vectors",
    "vector_count",
    type=int,
    default=8,
    show_default=True,
    help="Test vectors to write: rows of --calib (at least half of them reaching the last layer when "
    "it has such rows), else random inputs chosen so that every layer has work.",
)
def compile_command(
    model: Path, outdir: Path | None, board: str, precision: str | None, max_error: float | None, policy: str,
    objective: str, calib: Path | None, pes: int | None, act_density: float | None, vector_count: int,
) -> None:  # fmt: skip
    """Compile MODEL (ONNX, or a Graph Challenge TSV folder) into an FPGA design.

    Writes OUTDIR/hls (a Vitis HLS project), OUTDIR/rtl (Verilog), OUTDIR/vectors (golden test
    vectors), the off-chip weight images of sequential stages and OUTDIR/manifest.json. The folder
    appears only when complete. Verify it with `fpgagen csim` and `fpgagen sim`.

    Prints the error against float on the --calib inputs (or warns that ranges were assumed) and
    the values that saturate, per layer. With --max-error E, the formats are chosen per layer, the
    cheapest that keep the error within E; an unreachable E is refused, naming the layer.
    """
    front = FrontOptions(precision, policy, objective, calib, pes, act_density, max_error=max_error)
    options = CompileOptions(board, front, vector_count)
    target = outdir
    if target is None:
        target = default_output_folder(model)
        if target != DEFAULT_ROOT / default_name(model):
            err.print(f"note: {DEFAULT_ROOT / default_name(model)} holds something else; writing {target}")
    with Steps() as steps:
        summary = compile_model(model, target, options, step=steps.begin)
    estimate = summary.model.schedule.estimate
    stages = summary.model.schedule.stages
    # Runs of alike stages, so a 120-layer model's summary stays one line.
    runs = [(mode_pes, len(list(group))) for mode_pes, group in groupby((s.mode, s.pes) for s in stages)]
    modes = ", ".join(f"{count} {mode} P={pes}" for (mode, pes), count in runs)
    out.print(f"wrote {summary.outdir} in {summary.seconds:.1f} s ({summary.bytes_written / 1e6:.1f} MB)")
    out.print(f"  {plural(len(summary.model.layers), 'layer')} in {plural(len(stages), 'stage')}: {modes}")
    out.print(
        f"  estimated {estimate.steady_vectors_per_s:.4g} vectors/s (interval {estimate.interval:.0f} cycles), "
        f"latency {estimate.latency:.0f} cycles at {summary.model.schedule.clock_mhz:g} MHz"
    )
    if summary.model.schedule.limit is not None:
        out.print(f"  limited by {escape(summary.model.schedule.limit.reason)}")
    if summary.clock_note:
        err.print(f"note: {escape(summary.clock_note)}")
    where = str(summary.outdir.resolve())
    if any(character.isspace() for character in where):
        # run_hls.tcl gives Vitis HLS this folder inside -cflags and -argv strings, which it splits
        # at spaces; fpgagen's own csim and sim are not affected
        err.print(
            f"[yellow]warning:[/] {escape(where)} holds a space: Vitis HLS splits "
            "run_hls.tcl's compiler flags and testbench arguments there; move the design to a path without "
            "one before `vitis_hls -f hls/run_hls.tcl`"
        )
    print_unproven(summary.model.schedule)
    vectors = read_vectors(summary.outdir / "vectors")
    out.print(f"  {plural(vectors.batch, 'test vector')}: {escape(vectors.source)}")
    idle = idle_layers(summary.model, vectors)
    if idle:
        err.print(f"[yellow]warning:[/] no test vector gives {', '.join(idle)} any work (no nonzero activation "
                  "meets a nonzero weight there), so csim and sim do not verify those layers")  # fmt: skip
    _print_numerics(summary)


def _print_numerics(summary: CompileSummary) -> None:
    """The formats, the error against float and where values saturate."""
    model, numerics = summary.model, summary.numerics
    accuracy = numerics.accuracy
    weights = sorted({layer.numerics.weight_format.bits for layer in model.layers})
    acts = sorted({model.input_format.bits} | {layer.numerics.output_format.bits for layer in model.layers})
    out.print(f"  formats: {_span(weights)}-bit weights, {_span(acts)}-bit activations (per layer in manifest.json)")
    if accuracy.inputs == TEST_VECTORS:
        err.print(
            "[yellow]warning:[/] no --calib: activation ranges were assumed from inputs in [-1, 1]; inputs "
            "beyond saturate, and the error on your data is unknown"
        )
        where = f"on the {accuracy.samples} test vectors (random inputs within the input format's range)"
    else:
        where = f"on the {accuracy.samples} calibration inputs"
    for line in accuracy_lines(accuracy, where, numerics.max_error):
        out.print(f"  {line}")
    if numerics.max_error is not None and numerics.goal == numerics.max_error:
        err.print(
            "note: the widest formats need the whole bound: nothing of it is kept for inputs other than the "
            "calibration ones"
            + (
                "; nor do the ranges keep their guard bit: inputs beyond the calibration saturate"
                if numerics.margin == 1.0
                else ""
            )
        )


def _span(bits: list[int]) -> str:
    return f"{bits[0]}" if len(bits) == 1 else f"{bits[0]}-{bits[-1]}"
