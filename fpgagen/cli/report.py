"""`fpgagen report`: one HTML page with the design, its verification and its measured cycles."""

from __future__ import annotations

from pathlib import Path

import click

from . import app
from .common import out


@app.command()
@click.argument("outdir", type=click.Path(path_type=Path))
def report(outdir: Path) -> None:
    """Write OUTDIR/report.html: layers, schedule, estimates, C and RTL simulation results,
    measured cycles and efficiency, and Yosys resources when `fpgagen synth` has run."""
    from ..report import write_report  # here, not at the top: matplotlib takes half a second to import

    out.print(f"wrote {write_report(outdir)}")
