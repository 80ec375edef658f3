"""Shared test helpers."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from click.testing import CliRunner

from fpgagen.cli import app


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
