"""Verilator's runtime library, compiled once per machine instead of once per design.

Every Verilator build compiles the same runtime sources (verilated.cpp, its VPI, thread and DPI
parts) besides the design's own C++: 16 of the 31 s of CPU that `make` takes for the test MLP
`dataflow_only`. Those objects depend only on the Verilator and compiler versions, the make flags
and whether waveforms are traced, never on the design (they are compiled without its headers). So
the build takes them from a cache folder when it has them, and the first build on a machine fills
the cache. A cache that cannot be read or written is skipped: the build then compiles them as
before.

verilated.mk makes the objects depend on the makefile Verilator has just written, so they must be
put in place after Verilator and before make: `runner()` is cocotb's Verilator runner with that
step between its two build commands.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from cocotb_tools.runner import Verilator

from .user_cache import cache_folder

# The objects of verilated.mk's VK_GLOBAL_OBJS that cocotb's --vpi build compiles; verilator.o
# (cocotb's main) includes the design's header and is not among them.
OBJECTS = ("verilated.o", "verilated_vpi.o", "verilated_threads.o", "verilated_dpi.o")
# What else decides how make compiles them: environment variables verilated.mk reads.
_FLAGS = ("CXX", "MAKEFLAGS", "CPPFLAGS", "CXXFLAGS", "OPT", "OPT_FAST", "OPT_SLOW", "OPT_GLOBAL")


class _CachingVerilator(Verilator):
    def _build_command(self):
        commands = super()._build_command()
        if len(commands) != 2 or commands[1][0] != "make":  # not the cocotb this was written for
            return commands
        verilate, make = commands
        waves = "1" if self.waves else "0"
        restoring = [sys.executable, "-m", __name__, "restore", str(self.build_dir), waves]
        return [verilate, restoring, make]


def runner() -> Verilator:
    """cocotb's Verilator runner, taking the runtime objects from the cache (`save` fills it)."""
    return _CachingVerilator()


def restore(build: Path, waves: bool) -> None:
    """Put the cached runtime objects into the build folder `build`, where none is yet."""
    cached = _folder(waves)
    if cached is None or not all((cached / name).is_file() for name in OBJECTS):
        return
    for name in OBJECTS:
        if not (build / name).exists():
            # A copy, not a link: its time is now, after the makefile's, so make takes it as built.
            shutil.copyfile(cached / name, build / name)


def save(build: Path, waves: bool) -> None:
    """Keep the runtime objects of a finished build for the next ones, unless kept already."""
    cached = _folder(waves)
    if cached is None or not all((build / name).is_file() for name in OBJECTS):
        return
    try:
        cached.mkdir(parents=True, exist_ok=True)
        for name in OBJECTS:
            if not (cached / name).is_file():
                # Written aside and renamed: a build reading the cache meanwhile sees whole files.
                handle, temporary = tempfile.mkstemp(dir=cached, prefix=f".{name}.")
                os.close(handle)
                shutil.copyfile(build / name, temporary)
                os.replace(temporary, cached / name)
    except OSError:
        pass  # a read-only or full disk: the next build compiles them again


def _folder(waves: bool) -> Path | None:
    """The cache folder of these objects: one per Verilator, compiler, flags and tracing."""
    try:
        verilator = version("verilator")
    except PackageNotFoundError:
        return None  # a Verilator of the system's: its version is not known here
    try:
        compiler = subprocess.run(
            [os.environ.get("CXX", "g++"), "--version"], capture_output=True, text=True, check=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    flags = [f"{name}={os.environ.get(name, '')}" for name in _FLAGS]
    key = "\0".join([verilator, compiler, *flags, f"waves={waves}"])
    return cache_folder() / "verilator-runtime" / hashlib.sha256(key.encode()).hexdigest()[:16]


if __name__ == "__main__":  # the runner's step between Verilator and make: restore BUILD WAVES
    try:
        restore(Path(sys.argv[2]), sys.argv[3] == "1")
    except OSError:
        pass  # make compiles what is missing
