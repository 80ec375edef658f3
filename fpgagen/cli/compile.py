"""`fpgagen compile`: a model file into a design folder (HLS project, RTL, vectors, manifest)."""

from __future__ import annotations

from itertools import groupby
from pathlib import Path

import click
from rich.markup import escape

from ..compile import CompileOptions, compile_model, default_outdir
from ..schedule.scheduler import OBJECTIVES, POLICIES
from ..vectors import idle_layers, read_vectors
from . import app
from .common import calib_option, err, model_argument, out, plural, precision_option
from .progress import Steps


@app.command(name="compile")
@model_argument
@click.option(
    "-o", "--out", "outdir", type=click.Path(path_type=Path), help="Output folder [default: hls_out/<model>]."
)
@click.option(
    "--board",
    default="u280",
    show_default=True,
    help="Built-in board (u280, u250, zcu104, pynq-z2) or a .yaml profile.",
)
@precision_option
@click.option(
    "--schedule",
    "policy",
    type=click.Choice(POLICIES),
    default="auto",
    show_default=True,
    help="Let the scheduler mix dataflow and sequential stages, or force one style.",
)
@click.option("--objective", type=click.Choice(OBJECTIVES), default="throughput", show_default=True)
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
    model: Path, outdir: Path | None, board: str, precision: str, policy: str, objective: str,
    calib: Path | None, pes: int | None, act_density: float | None, vector_count: int,
) -> None:  # fmt: skip
    """Compile MODEL (ONNX, or a Graph Challenge TSV folder) into an FPGA design.

    Writes OUTDIR/hls (a Vitis HLS project), OUTDIR/rtl (Verilog), OUTDIR/vectors (golden test
    vectors), the off-chip weight images of sequential stages and OUTDIR/manifest.json. The folder
    appears only when complete. Verify it with `fpgagen csim` and `fpgagen sim`.
    """
    options = CompileOptions(board, precision, policy, objective, calib, pes, act_density, vector_count)
    target = outdir or default_outdir(model)
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
    vectors = read_vectors(summary.outdir / "vectors")
    out.print(f"  {plural(vectors.batch, 'test vector')}: {escape(vectors.source)}")
    idle = idle_layers(summary.model, vectors)
    if idle:
        err.print(f"[yellow]warning:[/] no test vector gives {', '.join(idle)} any work (no nonzero activation "
                  "meets a nonzero weight there), so csim and sim do not verify those layers")  # fmt: skip
