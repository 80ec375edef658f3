"""Shared test helpers."""

from __future__ import annotations

import signal
from dataclasses import dataclass

import pytest
from click.testing import CliRunner

from fpgagen.cli import app

# A test run started in the background by a script (`pytest &`) inherits Ctrl-C ignored, as POSIX
# shells do for background jobs, and so would every fpgagen the tests start: the tests that press
# Ctrl-C would see it ignored, rightly. Give the run the disposition a terminal gives.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli():
    """Run `fpgagen ARGS...` in-process; returns exit code, stdout and stderr."""

    def run(*args) -> CliResult:
        result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
        return CliResult(result.exit_code, result.stdout, result.stderr)

    return run
