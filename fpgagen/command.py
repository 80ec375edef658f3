"""The `fpgagen` console script. Loading the command line (numpy, scipy, onnx and every command)
takes about a second; a Ctrl-C in it exits like one in a command, without a traceback."""

from __future__ import annotations

import sys

from .errors import EXIT_INTERRUPTED, INTERRUPTED


def main() -> None:
    try:
        from .cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write(f"{INTERRUPTED}\n")
        raise SystemExit(EXIT_INTERRUPTED) from None
    run()
