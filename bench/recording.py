"""What the benchmarks share: the machine they ran on, and merging a run into a results file."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

from fpgagen.atomic import atomic_file


def machine() -> dict:
    return {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()}


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def merge_record(path: Path, key: str, record: dict) -> None:
    """Store `record` under `key` in the JSON file `path`, keeping the other configurations' runs."""
    results = json.loads(path.read_text()) if path.is_file() else {}
    results[key] = record
    with atomic_file(path) as partial:
        partial.write_text(json.dumps(results, indent=2) + "\n")
