"""`fpgagen demo`: the whole flow on a generated Graph Challenge network, in a few minutes."""

from __future__ import annotations

from pathlib import Path

import click

from . import app
from .common import err, out

STEPS = "example, compile, csim, sim, report"


@app.command()
@click.option(
    "-o",
    "--out",
    "folder",
    type=click.Path(path_type=Path),
    default=Path("hls_out/demo"),
    show_default=True,
    help="Where the example and the design go.",
)
@click.option("--neurons", default=256, show_default=True, help="Graph Challenge layer width (a square, 16 x 2^k).")
@click.option("--layers", default=6, show_default=True, help="Graph Challenge layers.")
@click.option("--simulator", type=click.Choice(["verilator", "icarus"]), default="verilator", show_default=True)
@click.pass_context
def demo(ctx: click.Context, folder: Path, neurons: int, layers: int, simulator: str) -> None:
    """Generate a Graph Challenge network, compile it, and verify the design bit for bit.

    Runs: example graphchallenge, compile (calibrated on the example's images), csim (the HLS C++
    under g++), sim (the RTL under cocotb) and report. About a minute and a half on two cores, mostly the
    Verilator build.
    """
    from . import compile as compile_module
    from . import csim as csim_module
    from . import examples
    from . import report as report_module
    from . import sim as sim_module

    example, design = folder / "example", folder / "design"
    err.print(f"[bold]1/5[/] Graph Challenge example: {neurons} neurons x {layers} layers -> {example}")
    ctx.invoke(examples.graphchallenge, neurons=neurons, layers=layers, inputs=64, out_dir=example)
    err.print(f"[bold]2/5[/] compile -> {design}")
    ctx.invoke(compile_module.compile_command, model=example / "model.onnx", outdir=design,
               calib=example / "images.npy", vector_count=16)  # fmt: skip
    err.print("[bold]3/5[/] C simulation of the HLS project")
    ctx.invoke(csim_module.csim, outdir=design)
    err.print(f"[bold]4/5[/] RTL simulation ({simulator})")
    ctx.invoke(sim_module.sim, outdir=design, simulator=simulator)
    err.print("[bold]5/5[/] report")
    ctx.invoke(report_module.report, outdir=design)
    out.print(f"demo passed: {STEPS} on {design}")
