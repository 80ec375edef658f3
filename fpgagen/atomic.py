"""Write outputs so that they appear only when complete.

Everything is written into a hidden temporary sibling of the target and moved into place by a
rename at the end; an error on the way removes the temporary and leaves the target untouched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_directory(target: Path) -> Iterator[Path]:
    """Yield an empty folder that replaces `target` (if any) when the block ends without error."""
    target = Path(target)
    created = _make_parents(target.parent)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    work.chmod(0o777 & ~_umask())  # mkdtemp makes private folders; outputs get the usual mode
    try:
        yield work
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        _remove_empty(created)
        raise
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
        os.replace(target, old / target.name)
        os.replace(work, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(work, target)


@contextmanager
def atomic_file(target: Path) -> Iterator[Path]:
    """Yield a temporary path that replaces `target` when the block ends without error."""
    target = Path(target)
    created = _make_parents(target.parent)
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    os.close(handle)
    work = Path(name)
    work.chmod(0o666 & ~_umask())  # mkstemp makes private files; outputs get the usual mode
    try:
        yield work
    except BaseException:
        work.unlink(missing_ok=True)
        _remove_empty(created)
        raise
    os.replace(work, target)


def _make_parents(folder: Path) -> list[Path]:
    """Create `folder` and its missing parents; return the ones created, deepest first."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir()
    return missing


def _remove_empty(folders: list[Path]) -> None:
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return
