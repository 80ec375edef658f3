"""Write outputs so that they appear only when complete, and clean up after runs that were killed.

A new folder is built in a hidden temporary sibling and renamed into place at the end. An existing
folder (an earlier output, or an empty folder, possibly the current directory) is never replaced
as a whole: the new entries are built in a hidden folder inside it and swapped in entry by entry,
the completion marker (a design's manifest) last. An error or Ctrl-C on the way removes the
temporary and leaves the target as it was.

Every temporary is named `.<name>.fpgagen-<pid>-<random>.partial` (or `.old`): a run killed
outright (SIGKILL) leaves one behind, and the next run that writes into the same place removes
those whose process is gone.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import FpgagenError

_LEFTOVER = re.compile(r"^\.(?:.*\.)?fpgagen-(?P<pid>\d+)-[a-z0-9_]+\.(?P<kind>partial|old)$")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _prefix(name: str = "") -> str:
    return f".{name}.fpgagen-{os.getpid()}-" if name else f".fpgagen-{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def leftovers(folder: Path) -> list[Path]:
    """Temporaries in `folder` left by fpgagen runs that are no longer running."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = []
    for entry in folder.iterdir():
        match = _LEFTOVER.match(entry.name)
        if match and int(match["pid"]) != os.getpid() and not _alive(int(match["pid"])):
            found.append(entry)
    return found


def is_temporary(name: str) -> bool:
    """Whether `name` is one of fpgagen's temporaries (of this run, another or a dead one)."""
    return _LEFTOVER.match(name) is not None


def interrupted_replacement(folder: Path, marker: str) -> bool:
    """Whether a dead run was swapping a new output into `folder`: its `.old` temporary holds
    the earlier output's `marker` (which leaves the folder first and arrives last)."""
    return any(path.name.endswith(".old") and (path / marker).is_file() for path in leftovers(folder))


def remove_leftovers(folder: Path) -> None:
    for path in leftovers(folder):
        _remove(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def absolute(path: Path) -> Path:
    """`path` made absolute with `.` and `..` resolved, so that `-o .` has a real name."""
    return Path(os.path.abspath(path))


@contextmanager
def atomic_directory(
    target: Path, replaceable: Callable[[str], bool] = lambda name: True, last: str | None = None
) -> Iterator[Path]:
    """Yield an empty folder whose entries become `target`'s when the block ends without error.

    A missing `target` is created by one rename. An existing one keeps its own inode (it may be
    the current directory) and any entry `replaceable` refuses; its replaceable entries are
    replaced, with the entry named `last` removed first and put in place last.
    """
    target = absolute(target)
    remove_leftovers(target.parent)
    if target.is_dir():
        with _work_inside(target) as work:
            yield work
            # A dead run's temporaries go only now: until the swap, they say what the folder's
            # half-swapped entries are (fpgagen.outdir checks them again before the swap).
            remove_leftovers(target)
            with _signals_deferred():
                _swap_entries(target, work, replaceable, last)
        return
    created = _make_parents(target.parent)
    with _named(target):
        work = Path(tempfile.mkdtemp(prefix=_prefix(target.name), suffix=".partial", dir=target.parent))
    work.chmod(0o777 & ~_umask())  # mkdtemp makes private folders; outputs get the usual mode
    try:
        yield work
        with _named(target):
            os.replace(work, target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        _remove_empty(created)
        raise


@contextmanager
def _work_inside(target: Path) -> Iterator[Path]:
    with _named(target):
        work = Path(tempfile.mkdtemp(prefix=_prefix(), suffix=".partial", dir=target))
    work.chmod(0o777 & ~_umask())
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _swap_entries(target: Path, work: Path, replaceable: Callable[[str], bool], last: str | None) -> None:
    """Move `target`'s replaceable entries aside, `work`'s entries in (`last` at the end), then
    delete the old ones. A kill in between leaves the `.old` temporary holding `last`, by which
    the next run recognizes the folder (`interrupted_replacement`)."""
    old = Path(tempfile.mkdtemp(prefix=_prefix(), suffix=".old", dir=target))
    previous = [entry for entry in target.iterdir() if not is_temporary(entry.name) and replaceable(entry.name)]
    for entry in sorted(previous, key=lambda entry: entry.name != last):
        os.replace(entry, old / entry.name)
    for entry in sorted(work.iterdir(), key=lambda entry: entry.name == last):
        os.replace(entry, target / entry.name)
    shutil.rmtree(old, ignore_errors=True)


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM back for the few renames that must not be cut in half."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


@contextmanager
def atomic_file(target: Path) -> Iterator[Path]:
    """Yield a temporary path that replaces the file `target` when the block ends without error."""
    target = absolute(target)
    if target.is_dir():
        raise FpgagenError(f"{target}: is a folder; give the name of a file to write")
    remove_leftovers(target.parent)
    created = _make_parents(target.parent)
    with _named(target):
        handle, name = tempfile.mkstemp(prefix=_prefix(target.name), suffix=".partial", dir=target.parent)
    os.close(handle)
    work = Path(name)
    work.chmod(0o666 & ~_umask())  # mkstemp makes private files; outputs get the usual mode
    try:
        yield work
        with _named(target):
            os.replace(work, target)
    except BaseException:
        work.unlink(missing_ok=True)
        _remove_empty(created)
        raise


def _make_parents(folder: Path) -> list[Path]:
    """Create `folder` and its missing parents; return the ones created, deepest first."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    if not folder.is_dir():
        raise FpgagenError(f"{folder}: is a file, so nothing can be written below it")
    for path in reversed(missing):
        with _named(path):
            path.mkdir()
    return missing


@contextmanager
def _named(target: Path) -> Iterator[None]:
    """An OSError of the temporaries' making and renaming as an error about `target`, the path the
    user gave: the temporary's name would mean nothing to them."""
    try:
        yield
    except OSError as exc:
        raise FpgagenError(f"{target}: cannot be written ({exc.strerror or exc})") from None


def _remove_empty(folders: list[Path]) -> None:
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return
