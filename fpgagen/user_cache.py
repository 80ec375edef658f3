"""Where fpgagen keeps what it builds once per machine rather than once per design."""

from __future__ import annotations

import os
from pathlib import Path


def cache_folder() -> Path:
    """`$XDG_CACHE_HOME/fpgagen`, or `~/.cache/fpgagen` (the XDG base directory rule)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fpgagen"
