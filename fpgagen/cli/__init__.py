"""The `fpgagen` command line: one module per command, registered on the group below."""

from __future__ import annotations

import os
import signal
import sys
import traceback

import click

from .. import __version__
from ..errors import EXIT_INTERRUPTED, INTERRUPTED, CheckFailed, FpgagenError

EXIT_INTERNAL = 3


class _App(click.Group):
    """Maps every way a command can stop to its exit code (README.md, "Exit codes"): 1 a failed
    check, 2 bad input (a message, no traceback), 3 an internal error (the traceback only with
    --debug), 130 interrupted. Outputs are written atomically, so none of these leaves a partial
    file or folder behind."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except FpgagenError as exc:
            click.secho(f"error: {exc}", err=True, fg="red")
            ctx.exit(exc.exit_code)
        except CheckFailed as exc:
            click.secho(f"check failed: {exc}", err=True, fg="red")
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.secho(INTERRUPTED, err=True, fg="red")
            ctx.exit(EXIT_INTERRUPTED)
        except OSError as exc:
            # The file system refused (permissions, a full disk, a path that cannot be made): bad input.
            where = f"{exc.filename}: " if exc.filename else ""
            click.secho(f"error: {where}{exc.strerror or exc}", err=True, fg="red")
            ctx.exit(FpgagenError.exit_code)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise  # click's own usage errors (exit 2), --help and ctx.exit
        except Exception as exc:  # noqa: BLE001  (anything else is fpgagen's own fault)
            if ctx.params.get("debug"):
                traceback.print_exc()
            click.secho(
                f"internal error: {type(exc).__name__}: {exc}\n"
                "This is a bug in fpgagen; please report it with the output of `fpgagen --debug ...`.",
                err=True,
                fg="red",
            )
            ctx.exit(EXIT_INTERNAL)


@click.group(cls=_App, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="fpgagen")
@click.option("--debug", is_flag=True, help="Print the traceback of an internal error.")
def app(debug: bool) -> None:
    """Compile sparse neural networks (ONNX or Graph Challenge TSV) into FPGA accelerators.

    Exit codes: 0 success, 1 a verification found a difference, 2 bad input, 3 an internal error,
    130 interrupted (Ctrl-C or SIGTERM).
    """


def _terminate(signum: int, frame) -> None:
    raise KeyboardInterrupt  # cleaned up and reported like Ctrl-C


class _Unbroken:
    """A standard stream whose reader may go away (`fpgagen compile ... | head -1`): once the pipe
    is broken, what is written goes to /dev/null, so the command still finishes its work and exits
    with its own code (click would exit 1, which means a verification failed)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._discard()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._discard()

    def _discard(self) -> None:
        # The descriptor too, as the Python documentation advises for SIGPIPE: the interpreter
        # flushes the original stream at exit, which would report the broken pipe again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())
        os.close(devnull)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)  # isatty, fileno, encoding: what rich and click ask


def main() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    sys.stdout, sys.stderr = _Unbroken(sys.stdout), _Unbroken(sys.stderr)
    app(prog_name="fpgagen")


# Registration: each module adds its commands to `app`.
from . import analyze, compile, csim, demo, examples, predict, prune, report, schedule, share, sim, sweep, synth

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
    "share",
    "sim",
    "sweep",
    "synth",
]
