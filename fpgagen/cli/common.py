"""Options and helpers shared by the commands."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from ..accuracy import Accuracy
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

_SATURATED_SHOWN = 4  # layers named in the saturation line


def accuracy_lines(accuracy: Accuracy, where: str, bound: float | None = None, range_of: str = "") -> list[str]:
    """The error against float `where` it was measured (relative to the output range, `range_of`
    which inputs if not these), and the values that saturated, per layer."""
    asked = f" (bound {bound:g})" if bound is not None else ""
    saturated = [
        f"{layer.name} {layer.saturated} of {layer.values} ({layer.fraction:.2%})"
        for layer in accuracy.saturated_layers
    ]
    if accuracy.input_saturated:
        saturated.insert(0, f"inputs {accuracy.input_saturated} of {accuracy.input_values}")
    more = f" and {len(saturated) - _SATURATED_SHOWN} more" if len(saturated) > _SATURATED_SHOWN else ""
    error = (
        f"error against float {where}: max {accuracy.max_error:.3%}{asked}, mean {accuracy.mean_error:.3%} "
        f"of the output range{range_of} ({accuracy.output_range:.4g})"
    )
    return [error, f"saturated values: {', '.join(saturated[:_SATURATED_SHOWN]) + more if saturated else 'none'}"]
