"""C simulation of a generated HLS project: build its testbench with g++, run it, read its verdict.

The testbench (the manifest's `hls.testbench`, tb_<top>.cpp) prints one line per outcome:
`DESIGN ... nnz=<n>`, then either `PASS vectors=<n> seconds=<s>`,
`MISMATCH layer=<name> vector=<n> index=<j> expected=<e> got=<g>`, or `ERROR <what>` (a broken
channel protocol, a missing file). It exits 0, 1 (a difference) or 2 (unusable vectors or weight
images).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from ...errors import FpgagenError

_PASS = re.compile(r"^PASS vectors=(\d+) seconds=([0-9.eE+-]+)$", re.MULTILINE)
_MISMATCH = re.compile(r"^MISMATCH layer=(\w+) vector=(\d+) index=(\d+) expected=(-?\d+) got=(-?\d+)$", re.MULTILINE)
_DESIGN = re.compile(r"^DESIGN top=(\w+) layers=(\d+) nnz=(\d+)$", re.MULTILINE)
_ERROR = re.compile(r"^ERROR (.*)$", re.MULTILINE)
# The two translation units (the design, the testbench) build in parallel.
BUILD_JOBS = 2


@dataclass(frozen=True)
class Mismatch:
    layer: str
    vector: int
    index: int
    expected: int
    got: int

    def __str__(self) -> str:
        return f"layer {self.layer}, vector {self.vector}, index {self.index}: expected {self.expected}, got {self.got}"


@dataclass(frozen=True)
class CsimResult:
    passed: bool
    vectors: int
    seconds: float  # the whole design on every vector, as the testbench timed it
    build_seconds: float
    wall_seconds: float  # build and run
    nnz: int  # nonzero weights of the design: nominal edges per vector
    mismatch: Mismatch | None
    error: str | None  # a failure other than a wrong value: build, protocol, crash
    output: str  # what the testbench printed

    @property
    def edges_per_second(self) -> float:
        """Nominal edges (vectors x nonzero weights) per second of the whole-design run."""
        return self.vectors * self.nnz / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict:
        data = asdict(self)
        del data["output"]
        data["edges_per_second"] = self.edges_per_second
        return data


def run_csim(
    outdir: Path, vectors_dir: Path, status: Callable[[str], None] | None = None, jobs: int = BUILD_JOBS
) -> CsimResult:
    """Build OUTDIR/hls's testbench (make, g++) and run it on `vectors_dir` and OUTDIR's weight images.

    `status` is told what happens (the build, then the run), for a progress display. `jobs` caps the
    g++ processes of the build (a sweep, which runs one point per core, builds with one).
    """
    from ...manifest import read_manifest  # here, not above: the manifest module imports this package

    outdir, vectors_dir = Path(outdir), Path(vectors_dir)
    hls = read_manifest(outdir).get("hls", {})
    if "testbench" not in hls:
        raise FpgagenError(f"{outdir}: its manifest names no HLS testbench (an older fpgagen made it); compile again")
    project = outdir / hls["folder"]
    bench = project / hls["testbench"]
    if not (project / "Makefile").is_file() or not bench.is_file():
        raise FpgagenError(f"{outdir}: no generated HLS project in {hls['folder']}/ (run fpgagen compile first)")
    for tool in ("make", os.environ.get("CXX", "g++")):
        if shutil.which(tool) is None:
            raise FpgagenError(f"C simulation needs {tool!r}, which is not installed")
    started = time.perf_counter()
    if status:
        status("building the C simulation with g++")
    build = subprocess.run(
        ["make", "-C", str(project), "-j", str(jobs), "build"], capture_output=True, check=False, text=True
    )
    build_seconds = time.perf_counter() - started
    if build.returncode != 0:
        log = _first_error(build.stdout + build.stderr)
        return _failed(f"the C simulation did not build:\n{log}", build_seconds, started)
    if status:
        status("running the C simulation")
    binary = project / "bin" / bench.stem
    run = subprocess.run(
        [str(binary), str(vectors_dir.resolve()), str(outdir.resolve())], capture_output=True, check=False, text=True
    )
    return _verdict(run, build_seconds, started, vectors_dir)


def _verdict(run: subprocess.CompletedProcess, build_seconds: float, started: float, vectors_dir: Path) -> CsimResult:
    output = run.stdout
    design = _DESIGN.search(output)
    nnz = int(design[3]) if design else 0
    errors = _ERROR.findall(output)
    if run.returncode == 2 and errors:
        raise FpgagenError(f"{vectors_dir}: {errors[0]}")
    passed, mismatch = _PASS.search(output), _MISMATCH.search(output)
    if run.returncode == 0 and passed:
        return CsimResult(
            passed=True,
            vectors=int(passed[1]),
            seconds=float(passed[2]),
            build_seconds=build_seconds,
            wall_seconds=time.perf_counter() - started,
            nnz=nnz,
            mismatch=None,
            error=None,
            output=output,
        )
    if mismatch:
        found = Mismatch(mismatch[1], int(mismatch[2]), int(mismatch[3]), int(mismatch[4]), int(mismatch[5]))
        return _failed(None, build_seconds, started, nnz, found, output)
    reason = errors[0] if errors else f"the testbench stopped with exit status {run.returncode}"
    return _failed(f"{reason}\n{_tail(output + run.stderr)}".strip(), build_seconds, started, nnz, None, output)


def _failed(
    error: str | None,
    build_seconds: float,
    started: float,
    nnz: int = 0,
    mismatch: Mismatch | None = None,
    output: str = "",
) -> CsimResult:
    return CsimResult(
        passed=False,
        vectors=0,
        seconds=0.0,
        build_seconds=build_seconds,
        wall_seconds=time.perf_counter() - started,
        nnz=nnz,
        mismatch=mismatch,
        error=error,
        output=output,
    )


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _first_error(log: str, lines: int = 30) -> str:
    """The compiler's log from its first error on: what explains a failed build."""
    text = log.strip().splitlines()
    first = next((i for i, line in enumerate(text) if "error" in line), max(0, len(text) - lines))
    return "\n".join(text[first : first + lines])
