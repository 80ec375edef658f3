"""Which folder a design may be written into, and which file a model (docs in README.md, "Output
folders").

`fpgagen compile` writes only into a folder that is missing, empty, or an earlier fpgagen design
(recognized by its manifest, and holding nothing fpgagen did not write: the manifest lists the
files compile wrote, so a file of the user's anywhere in the design, such as a Vitis HLS project in
hls/, is found, and the folder refused). It never writes into the
folder that holds the model or the calibration inputs. Without `-o` the folder is
`hls_out/<model file name>`; if that one holds another model's design (or anything else), the next
free `hls_out/<name>-2`, `-3`, ... is used instead, so two models never overwrite each other.

`fpgagen prune`, `share` and `import-tsv` write a model file only where none is, or over an earlier
model fpgagen wrote (an ONNX file whose producer is fpgagen), and never over the model they read.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath

# An ONNX file fpgagen wrote begins with ModelProto's ir_version (field 1, a one-byte varint) and
# then its producer_name (field 2): protobuf writes fields in their numbers' order.
_FPGAGEN_ONNX = re.compile(rb"\x08[\x00-\x7f]\x12\x07fpgagen")

from .atomic import absolute, interrupted_replacement, is_temporary, leftovers
from .errors import FpgagenError
from .manifest import NAME as MANIFEST
from .manifest import SCHEMA_FAMILY
from .results import CSIM_RESULTS, SIM_RESULTS, SYNTH_RESULTS

DEFAULT_ROOT = Path("hls_out")
_DESIGN_ENTRIES = re.compile(
    r"^(manifest\.json|hls|rtl|vectors|(csim|sim)_vectors|sim_build|report\.html|(csim|sim|synth)_results\.json"
    r"|weights\d+\.bin)$"
)
# What the other commands write at a design's top, and what their content always holds: the keys of
# the results (fpgagen/results.py) and the report's title (templates/report/report.html.j2).
_COMMAND_OUTPUTS = {
    CSIM_RESULTS: ("passed", "vectors_folder", "edges_per_second"),
    SIM_RESULTS: ("passed", "simulator", "vectors_folder"),
    SYNTH_RESULTS: ("logic_levels", "plausible_mhz"),
    "report.html": ("<title>fpgagen report: ",),
}
_SHOWN = 3  # foreign entries named in a refusal
# Folders of a design that fpgagen's own commands fill, whatever they hold: the RTL simulators'
# build (`fpgagen sim`), the C simulation's (`fpgagen csim`: the HLS Makefile's BUILD), and the
# vectors of their --inputs.
_BUILD_FOLDERS = ("sim_build", "hls/bin", "csim_vectors", "sim_vectors")
# Yosys's outputs, which `fpgagen synth` writes into the RTL folder and removes (fpgagen/synth.py):
# a killed synth leaves them behind.
_BUILD_FILES = ("rtl/synth_stat.json", "rtl/synth_netlist.json")


def is_design_entry(name: str) -> bool:
    """Whether `name` is something `fpgagen compile`, `csim`, `sim`, `synth` or `report` writes."""
    return _DESIGN_ENTRIES.match(name) is not None


def is_command_output(path: Path) -> bool:
    """Whether `path`, at the top of a design, is a file `csim`, `sim`, `synth` or `report` wrote:
    known by its content, since its name alone could be a file of the user's."""
    path = Path(path)
    marks = _COMMAND_OUTPUTS.get(path.name)
    if marks is None or not path.is_file():
        return False
    try:
        if path.suffix == ".html":
            with open(path, "rb") as file:
                return marks[0].encode() in file.read(4096)
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and all(key in data for key in marks)


def check_command_output(path: Path) -> None:
    """FpgagenError unless `path` is missing or an earlier output of the command about to replace it."""
    if Path(path).exists() and not is_command_output(path):
        raise FpgagenError(
            f"{path}: exists and fpgagen did not write it; fpgagen never overwrites a file it did not write: "
            "move it away first"
        )


def _manifest(folder: Path) -> dict | None:
    """The fpgagen manifest in `folder` (of this version or an earlier one), or None."""
    try:
        manifest = json.loads((Path(folder) / MANIFEST).read_text(encoding="utf-8"))
        if isinstance(manifest, dict) and str(manifest["schema"]).startswith(SCHEMA_FAMILY):
            return manifest
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def design_source(folder: Path) -> str | None:
    """The model file an fpgagen design in `folder` was compiled from ("" if it records none),
    or None when `folder` holds no fpgagen manifest (of this version or an earlier one)."""
    manifest = _manifest(folder)
    return None if manifest is None else (manifest.get("source") or {}).get("model") or ""


# A design's files, as its manifest lists them: relative path -> the SHA-256 digests its content
# may have (one; two for a half-swapped folder; none to check for the manifest itself).
Listed = dict[str, set[str]]


def written_files(folder: Path) -> dict[str, str]:
    """Every file below `folder` (a design just written), relative path -> SHA-256 of its content:
    what the manifest lists."""
    return {path.relative_to(folder).as_posix(): _digest(path) for path in sorted(folder.rglob("*")) if path.is_file()}


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def design_files(folder: Path) -> Listed | None:
    """The files an fpgagen design in `folder` was written with, as its manifest lists them (the
    manifest's own name included), or None when no manifest lists them: none is there, or one of an
    fpgagen before manifest schema 7."""
    files = (_manifest(folder) or {}).get("files")
    if not isinstance(files, dict) or not all(isinstance(value, str) for value in files.values()):
        return None
    return {name: {digest} for name, digest in files.items()} | {MANIFEST: set()}


def check_output_folder(folder: Path, inputs: list[Path]) -> Path:
    """`folder` as an absolute path if a design may be written into it, else FpgagenError.

    `inputs` are the files the compile reads (the model, the calibration inputs): the output
    folder may not hold any of them.
    """
    target = absolute(folder)
    if target.exists() and not target.is_dir():
        raise FpgagenError(f"{folder}: exists and is not a folder; choose another -o")
    for path in inputs:
        if absolute(path).resolve().is_relative_to(target.resolve()):
            raise FpgagenError(f"{folder}: holds {path}, an input of this compile; choose another -o")
    if not target.is_dir():
        return target
    dead = set(leftovers(target))
    busy = [entry.name for entry in target.iterdir() if is_temporary(entry.name) and entry not in dead]
    if busy:
        raise FpgagenError(f"{folder}: another fpgagen run is writing into it ({busy[0]}); wait for it to finish")
    check_nothing_foreign(folder)
    return target


def check_nothing_foreign(folder: Path) -> None:
    """FpgagenError if `folder` holds anything but an earlier fpgagen design. `compile` asks again
    right before it swaps its design in: the user may have added files while it worked."""
    target = absolute(folder)
    if not target.is_dir():
        return
    if design_source(target) is not None and design_files(target) is None:
        raise FpgagenError(
            f"{folder}: holds a design of an earlier fpgagen, whose manifest does not list the files it "
            "wrote, so fpgagen cannot tell them from yours: remove the folder or choose another -o"
        )
    foreign = _foreign_entries(target)
    if foreign:
        raise FpgagenError(
            f"{folder}: holds files fpgagen did not write ({some_of(foreign)}); fpgagen writes only into a missing or "
            "empty folder or an earlier fpgagen design: choose another -o"
        )


def some_of(entries: list[str]) -> str:
    """The first few of `entries`, and how many more, for a refusal."""
    more = f" and {len(entries) - _SHOWN} more" if len(entries) > _SHOWN else ""
    return ", ".join(entries[:_SHOWN]) + more


def check_output_model(path: Path, inputs: list[Path]) -> Path:
    """`path` if a model file may be written there, else FpgagenError: it must not be one of
    `inputs` (the files the command reads), and an existing file must be a model fpgagen wrote."""
    target = absolute(path)
    if target.is_dir():
        raise FpgagenError(f"{path}: is a folder; -o names the model file to write")
    for source in inputs:
        if target.exists() and absolute(source).exists() and target.resolve() == absolute(source).resolve():
            raise FpgagenError(f"{path}: is the model this command reads; choose another -o")
    if target.exists() and not _written_by_fpgagen(target):
        raise FpgagenError(
            f"{path}: exists and fpgagen did not write it; fpgagen never overwrites a file it did not write: "
            "choose another -o"
        )
    return target


def _written_by_fpgagen(path: Path) -> bool:
    with path.open("rb") as file:
        return _FPGAGEN_ONNX.match(file.read(16)) is not None


def _foreign_entries(folder: Path) -> list[str]:
    """Entries of `folder` (relative paths) that are not part of an earlier fpgagen design (none:
    it may be written)."""
    entries = sorted(entry.name for entry in folder.iterdir() if not is_temporary(entry.name))
    if not entries:
        return []
    foreign = [name for name in entries if not is_design_entry(name)]
    if foreign:
        return foreign
    listed = design_files(folder)
    if listed is None and design_source(folder) is None:
        listed = _interrupted_files(folder)
    if listed is not None:
        return _unlisted(folder, listed)
    return entries  # fpgagen's names, but no manifest says which files fpgagen wrote


def _interrupted_files(folder: Path) -> Listed | None:
    """When a dead run was swapping a design into `folder` (its manifest moved out first and in
    last), what the folder may hold of fpgagen's: the files of the design moved out (its `.old`
    temporary) and of the one moved in (its `.partial`). None when no such run left a list."""
    if not interrupted_replacement(folder, MANIFEST):
        return None
    lists = [design_files(path) for path in leftovers(folder) if path.is_dir()]
    found = [files for files in lists if files is not None]
    if not found:
        return None
    union: Listed = {}
    for files in found:
        for name, digests in files.items():
            union.setdefault(name, set()).update(digests)
    return union


def _unlisted(folder: Path, listed: Listed) -> list[str]:
    """What a design's `folder` holds beside its `listed` files as fpgagen wrote them, the folders on
    their way, the build folders and what the other commands wrote at its top: the user's files and
    folders, and listed files the user has changed since (symbolic links not followed)."""
    return _unlisted_files(
        folder, listed | {name: set() for name in _BUILD_FILES}, _BUILD_FOLDERS,
        lambda path: is_command_output(path) or is_temporary(path.name),
    )  # fmt: skip


def _unlisted_files(
    folder: Path,
    listed: Listed,
    build_folders: tuple[str, ...] = (),
    ours_at_top: Callable[[Path], bool] = lambda path: is_temporary(path.name),
) -> list[str]:
    """Entries below `folder` (relative paths) beside the `listed` files as fpgagen wrote them and
    the folders on their way: the user's, and listed files the user has changed since. Whatever is in
    `build_folders`, fpgagen's temporaries at the top, and the files `ours_at_top` accepts at the top
    are fpgagen's too."""
    kept = {parent.as_posix() for name in listed for parent in PurePosixPath(name).parents} | set(listed)
    found = []
    for root, folders, files in os.walk(folder):
        here = Path(root).relative_to(folder)
        top = here == Path(".")
        for name in sorted(folders):
            path = (here / name).as_posix()
            if path in build_folders or (top and is_temporary(name)):
                folders.remove(name)  # whatever a build or another run put there is fpgagen's
            elif path not in kept:
                found.append(path)
                folders.remove(name)  # named once, not file by file
        for name in sorted(files):
            path = (here / name).as_posix()
            if path not in kept and not (top and ours_at_top(Path(root) / name)):
                found.append(path)
            elif listed.get(path) and _digest(Path(root) / name) not in listed[path]:
                found.append(f"{path} (changed since fpgagen wrote it)")
    return sorted(found)


# The files fpgagen wrote into a folder that is not a design (an example, a sweep's kept point),
# with their digests: what a later run may replace there.
LISTING = "fpgagen-files.json"


def write_listing(folder: Path) -> None:
    """Record every file `folder` holds (fpgagen has just written them) in its LISTING."""
    files = written_files(folder)
    (Path(folder) / LISTING).write_text(json.dumps({"files": files}, indent=1) + "\n", encoding="utf-8")


def unlisted_in(folder: Path) -> list[str]:
    """What `folder` holds beside the files its LISTING names, as fpgagen wrote them: everything in
    it when it has no listing."""
    try:
        files = json.loads((Path(folder) / LISTING).read_text(encoding="utf-8"))["files"]
        if not isinstance(files, dict) or not all(isinstance(digest, str) for digest in files.values()):
            raise ValueError
    except (OSError, ValueError, KeyError, TypeError):
        return sorted(entry.name for entry in Path(folder).iterdir() if not is_temporary(entry.name))
    return _unlisted_files(Path(folder), {name: {digest} for name, digest in files.items()} | {LISTING: set()})


def default_name(model_path: Path) -> str:
    """The model file's name without its extension (a Graph Challenge folder's own name)."""
    path = absolute(model_path)
    return path.name if path.is_dir() else path.stem


def default_output_folder(model_path: Path) -> Path:
    """`hls_out/<model file name>`, or the first `-2`, `-3`, ... variant free for this model:
    missing, empty, or holding an earlier design of the same model file."""
    name = default_name(model_path)
    model = str(absolute(model_path).resolve())
    candidate, number = DEFAULT_ROOT / name, 1
    while not _free_for(candidate, model):
        number += 1
        candidate = DEFAULT_ROOT / f"{name}-{number}"
    return candidate


def _free_for(folder: Path, model: str) -> bool:
    if not folder.exists():
        return True
    if not folder.is_dir():
        return False
    if not any(not is_temporary(entry.name) for entry in folder.iterdir()):
        return True
    return design_source(folder) == model and not _foreign_entries(folder)
