"""Options and helpers shared by the commands."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from ..numerics import DEFAULT_PRECISION

# Results go to stdout; progress and notes to stderr, so `--json` output stays clean.
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

model_argument = click.argument("model", type=click.Path(path_type=Path))
precision_option = click.option(
    "--precision",
    default=DEFAULT_PRECISION,
    show_default=True,
    help="Fixed-point widths as wXaY (weights X bits, activations Y bits), or 'float'.",
)
calib_option = click.option(
    "--calib",
    type=click.Path(path_type=Path),
    help="Calibration inputs (.npy, one sample per row) to measure activation ranges.",
)
