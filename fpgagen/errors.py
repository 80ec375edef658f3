"""The two ways fpgagen stops early, and the exit codes the command line maps them to."""


class FpgagenError(Exception):
    """The input cannot be used (a model, a file, an option): exit code 2, nothing written."""

    exit_code = 2


class CheckFailed(Exception):
    """A verification ran and found a difference (C or RTL simulation): exit code 1."""

    exit_code = 1
