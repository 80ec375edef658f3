"""The `fpgagen` command line: one module per command, registered on the group below."""

from __future__ import annotations

import click

from .. import __version__
from ..errors import CheckFailed, FpgagenError


class _App(click.Group):
    """Maps fpgagen's two error kinds to their exit codes: 2 for bad input, 1 for a failed check."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except FpgagenError as exc:
            click.secho(f"error: {exc}", err=True, fg="red")
            ctx.exit(exc.exit_code)
        except CheckFailed as exc:
            click.secho(f"check failed: {exc}", err=True, fg="red")
            ctx.exit(exc.exit_code)


@click.group(cls=_App, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="fpgagen")
def app() -> None:
    """Compile sparse neural networks (ONNX or Graph Challenge TSV) into FPGA accelerators.

    Exit codes: 0 success, 1 a verification found a difference, 2 bad input.
    """


def main() -> None:
    app(prog_name="fpgagen")


# Registration: each module adds its commands to `app`.
from . import analyze, compile, csim, demo, examples, predict, prune, report, schedule, sim, sweep, synth

__all__ = [
    "analyze",
    "app",
    "compile",
    "csim",
    "demo",
    "examples",
    "main",
    "predict",
    "prune",
    "report",
    "schedule",
    "sim",
    "sweep",
    "synth",
]
