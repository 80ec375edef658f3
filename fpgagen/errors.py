"""The ways fpgagen stops early, and the exit codes the command line maps them to."""

# Ctrl-C or SIGTERM: outputs are written atomically, so nothing partial is left
EXIT_INTERRUPTED = 130
INTERRUPTED = "interrupted; no partial output is left behind"


class FpgagenError(Exception):
    """The input cannot be used (a model, a file, an option): exit code 2, nothing written."""

    exit_code = 2


class DoesNotFit(FpgagenError):
    """No design of the model fits the board. `short` names the resources the board lacks (DSP,
    BRAM, URAM, LUT, FF or channels), empty when each would suffice alone but not all at once."""

    def __init__(self, message: str, short: tuple[str, ...] = ()):
        super().__init__(message)
        self.short = short


class CheckFailed(Exception):
    """A verification ran and found a difference (C or RTL simulation): exit code 1."""

    exit_code = 1
