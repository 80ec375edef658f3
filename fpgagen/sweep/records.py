"""DIR/sweep.json: the sweep's settings and one record per finished point, rewritten atomically as
each point comes in, so that an interrupted sweep keeps every record it received.

DIR holds only what a sweep writes: sweep.json, sweep.html and, with --keep-designs, points/.
A folder with anything else in it is refused, and so is a kept point's folder holding anything
the sweep did not write there or a file changed since (each point lists its files,
fpgagen-files.json); an earlier sweep's folder is replaced.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from ..atomic import atomic_file
from ..errors import FpgagenError
from ..outdir import some_of, unlisted_in

SCHEMA = "fpgagen.sweep/1"
RECORDS = "sweep.json"
PAGE = "sweep.html"
POINTS = "points"
# States of a sweep: still running, every point recorded, stopped by the user.
RUNNING, COMPLETE, INTERRUPTED = "running", "complete", "interrupted"


def check_outdir(outdir: Path) -> None:
    """Refuse an output folder that holds anything but an earlier sweep's outputs."""
    outdir = Path(outdir)
    if not outdir.exists():
        return
    if not outdir.is_dir():
        raise FpgagenError(f"{outdir}: not a folder; give a new or empty folder for the sweep")
    contents = sorted(entry.name for entry in outdir.iterdir())
    if not contents:
        return
    foreign = [name for name in contents if not _sweep_output(name)]
    if foreign:
        raise FpgagenError(
            f"{outdir} holds files that are not a fpgagen sweep's ({', '.join(foreign[:5])}); "
            "give a new or empty folder, or an earlier sweep's"
        )
    if RECORDS not in contents or _schema(outdir / RECORDS) != SCHEMA:
        raise FpgagenError(f"{outdir} has no {RECORDS} of a fpgagen sweep; give a new or empty folder")
    foreign = _foreign_points(outdir / POINTS)
    if foreign:
        raise FpgagenError(
            f"{outdir} holds files the earlier sweep did not write ({some_of(foreign)}); give a new or empty folder, "
            "or move them away"
        )


def _foreign_points(points: Path) -> list[str]:
    """What `points` (an earlier sweep's kept designs) holds beside the files each point's listing
    names as the sweep wrote them (relative to the sweep's folder)."""
    if not points.is_dir():
        return [POINTS] if points.exists() else []
    foreign = []
    for entry in sorted(points.iterdir()):
        if not entry.is_dir() or entry.is_symlink():
            foreign.append(f"{POINTS}/{entry.name}")
        else:
            foreign += [f"{POINTS}/{entry.name}/{name}" for name in unlisted_in(entry)]
    return foreign


def _sweep_output(name: str) -> bool:
    partial = name.startswith((f".{RECORDS}.", f".{PAGE}.")) and name.endswith(".partial")
    return name in (RECORDS, PAGE, POINTS) or partial


def _schema(path: Path) -> str | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("schema") if isinstance(data, dict) else None


def clear_outdir(outdir: Path) -> None:
    """Remove an earlier sweep's outputs from `outdir` (checked by `check_outdir`) and make sure it exists."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    for entry in outdir.iterdir():
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()


class SweepLog:
    """The contents of sweep.json, written whole (atomically) at every change."""

    def __init__(self, outdir: Path, header: dict, points: int):
        self.path = Path(outdir) / RECORDS
        self.header = {"schema": SCHEMA} | header | {"points": points, "started": _now()}
        self.state = RUNNING
        self.records: list[dict] = []
        self.write()

    def add(self, record: dict) -> None:
        self.records.append(record)
        self.write()

    def finish(self, state: str) -> None:
        self.state = state
        self.write()

    def data(self) -> dict:
        records = sorted(self.records, key=lambda record: record["id"])
        finished = _now() if self.state != RUNNING else None
        return self.header | {"state": self.state, "finished": finished, "records": records}

    def write(self) -> None:
        with atomic_file(self.path) as work:
            work.write_text(json.dumps(self.data(), indent=2) + "\n", encoding="utf-8")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
