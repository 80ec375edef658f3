"""Options and helpers shared by the commands."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console, RenderableType
from rich.measure import Measurement

from ..accuracy import Accuracy
from ..ir import Schedule
from ..numerics import DEFAULT_PRECISION
from ..schedule.scheduler import OBJECTIVES, PROGRAM_SECONDS

# Results go to stdout; progress and notes to stderr, so `--json` output stays clean. Lines are
# never wrapped (soft_wrap): a pipe or a file gets each line whole.
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

model_argument = click.argument("model", type=click.Path(path_type=Path))


def precision_option(float_too: bool):
    """--precision of a command that takes the float reference too (`float_too`), or only a
    precision there is hardware for."""
    choices = "wXaY (weights X bits, activations Y bits)" + (", or 'float'" if float_too else "")
    return click.option(
        "--precision", default=DEFAULT_PRECISION, show_default=True, help=f"Fixed-point widths as {choices}."
    )


calib_option = click.option(
    "--calib",
    type=click.Path(path_type=Path),
    help="Calibration inputs (.npy, one sample per row) to measure activation ranges.",
)


def output_model_option(what: str):
    """-o/--out of a command that writes a model file (fpgagen.outdir.check_output_model); --output,
    its first name, still works."""
    return click.option(
        "-o",
        "--out",
        "--output",
        "output",
        required=True,
        type=click.Path(path_type=Path),
        help=f"Where to write the {what} (.onnx): a new file, or one fpgagen wrote before.",
    )


objective_option = click.option(
    "--objective",
    type=click.Choice(OBJECTIVES),
    default="throughput",
    show_default=True,
    help="throughput: the least initiation interval (then the least latency); latency: the least latency.",
)

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print the result as JSON on stdout instead of a table."
)

_UNBOUNDED = 1 << 16


def print_table(table: RenderableType, console: Console = out) -> None:
    """A terminal gets the table fitted to its width; a file or a pipe gets it at its natural
    width, so no cell is cut short with an ellipsis (rich assumes 80 columns when it cannot ask)."""
    if console.is_terminal:
        console.print(table)
        return
    natural = Measurement.get(console, console.options.update_width(_UNBOUNDED), table).maximum
    # print() cannot go wider than its console, so the table gets a console of its own width.
    Console(stderr=console.stderr, highlight=False, width=natural, color_system=None).print(table)


def plural(count: int, noun: str) -> str:
    """'1 layer', '2 layers', '3 latches'."""
    if count == 1:
        return f"{count} {noun}"
    suffix = "es" if noun.endswith(("s", "x", "ch", "sh")) else "s"
    return f"{count} {noun}{suffix}"


_SATURATED_SHOWN = 4  # layers named in the saturation line


def accuracy_lines(accuracy: Accuracy, where: str, bound: float | None = None, range_of: str = "") -> list[str]:
    """The error against float `where` it was measured (relative to the output range, `range_of`
    which inputs if not these), and the values that saturated, per layer."""
    asked = f" (bound {100 * bound:g}%)" if bound is not None else ""
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


def print_unproven(schedule: Schedule) -> None:
    """Warn when the scheduler's solver ran out of time before it could prove its choice least."""
    if schedule.unproven:
        err.print(
            f"[yellow]warning:[/] the scheduler's {' and '.join(schedule.unproven)} is the best its solver found in "
            f'{PROGRAM_SECONDS:g} s per program, not proven least (docs/cost-model.md, "Candidates")'
        )
