"""`fpgagen sim`: the RTL under cocotb (Verilator or Icarus), bit for bit against the golden model."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from ..arrays import read_array
from ..errors import CheckFailed
from ..manifest import read_manifest
from ..outdir import check_command_output
from ..results import SIM_RESULTS
from ..simulate import SIMULATORS, run_rtl_simulation
from . import app
from .common import err, out, plural
from .inputs import vectors_of
from .progress import Steps

SIM_VECTORS = "sim_vectors"


@app.command()
@click.argument("outdir", type=click.Path(path_type=Path))
@click.option("--simulator", type=click.Choice(SIMULATORS), default="verilator", show_default=True)
@click.option(
    "--inputs",
    "inputs_path",
    type=click.Path(path_type=Path),
    help=f"Inputs (.npy) to simulate instead of OUTDIR/vectors; their golden outputs come from the model "
    f"and are kept in OUTDIR/{SIM_VECTORS}, which `fpgagen report` then uses.",
)
@click.option("--waves", is_flag=True, help="Record waveforms (VCD for Verilator, FST for Icarus) in OUTDIR/sim_build.")
@click.option(
    "--keep-build",
    is_flag=True,
    help="Keep OUTDIR/sim_build after a passing run (it is always kept after a failing one, and with --waves).",
)
@click.option("--core", is_flag=True, help="Simulate the core with ap_ctrl_hs pins instead of the AXI4-Lite top.")
@click.option(
    "--rtl",
    "rtl_dir",
    type=click.Path(path_type=Path),
    help="Simulate this folder's Verilog instead (e.g. Vitis HLS's syn/verilog for the same design).",
)
@click.option("--toplevel", help="Top module of --rtl [default: the design's top].")
@click.option(
    "--reset-after",
    type=click.IntRange(min=1),
    help="Reset the design after this many outputs, in the middle of the batch, then run the whole batch again "
    "and compare that run: a reset must leave no partial sums behind.",
)
@click.option(
    "--move-images",
    is_flag=True,
    help="After the batch, move the off-chip weight images to other addresses, clear the old ones and run the "
    "batch again without a reset, comparing that run: every batch must load its tables from its own images.",
)
@click.option(
    "--memory-latency",
    type=click.IntRange(min=0),
    help="Cycles from a weight read's address to its data in the testbench's off-chip memory "
    "[default: the design's assumption, in the manifest's ports].",
)
def sim(
    outdir: Path, simulator: str, inputs_path: Path | None, waves: bool, keep_build: bool, core: bool,
    rtl_dir: Path | None, toplevel: str | None, reset_after: int | None, move_images: bool,
    memory_latency: int | None,
) -> None:  # fmt: skip
    """Simulate OUTDIR/rtl with the cocotb testbench and compare with the golden model.

    Exit 0 when every output matches bit for bit, 1 at the first difference. Writes
    OUTDIR/sim_results.json: cycles per vector, per layer busy and drain cycles, the simulator and
    the vectors simulated. The first Verilator build of a design takes a minute or more.
    """
    read_manifest(outdir)
    check_command_output(outdir / SIM_RESULTS)
    with Steps() as steps:
        inputs = None if inputs_path is None else read_array(inputs_path)
        vectors = vectors_of(outdir, inputs, inputs_path, SIM_VECTORS, steps)
        results = run_rtl_simulation(
            outdir, vectors, outdir / SIM_RESULTS, simulator=simulator, waves=waves, core=core, rtl=rtl_dir,
            toplevel=toplevel, keep_build=keep_build, reset_after=reset_after, move_images=move_images,
            memory_latency=memory_latency, progress=steps,
        )  # fmt: skip
    if not results["passed"]:
        m = results["first_mismatch"]
        raise CheckFailed(
            f"RTL differs from the golden model: layer {m['layer']}, vector {m['vector']}, index {m['index']}: "
            f"expected {m['expected']}, got {m['got']} (the build and its logs are in {outdir / results['build']})"
        )
    out.print(
        f"RTL simulation passed ({simulator}): {plural(results['vectors'], 'vector')} bit-exact, "
        f"{results['cycles_per_vector']:.0f} cycles per vector"
    )
    if results["build"]:
        err.print(f"kept the build in {escape(str(outdir / results['build']))}")
