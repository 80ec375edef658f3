"""Options and helpers shared by the commands."""

from __future__ import annotations

from pathlib import Path

import click
import numpy as np
from rich.console import Console

from ..atomic import atomic_file
from ..errors import FpgagenError
from ..numerics import DEFAULT_PRECISION

# Results go to stdout; progress and notes to stderr, so `--json` output stays clean.
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)

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


def read_array(path: Path | None) -> np.ndarray | None:
    """Load a .npy file, with an error that names it when it cannot be used."""
    if path is None:
        return None
    path = Path(path)
    if not path.is_file():
        raise FpgagenError(f"{path}: no such file")
    try:
        return np.load(path, allow_pickle=False)
    except Exception as exc:
        raise FpgagenError(f"{path}: not a readable .npy array ({exc})") from None


def write_array(path: Path, array: np.ndarray) -> None:
    with atomic_file(path) as work:
        with open(work, "wb") as handle:
            np.save(handle, array)
