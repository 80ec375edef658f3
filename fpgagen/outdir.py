"""Which folder a design may be written into, and which file a model (docs in README.md, "Output
folders").

`fpgagen compile` writes only into a folder that is missing, empty, or an earlier fpgagen design
(recognized by its manifest, and holding nothing fpgagen did not write). It never writes into the
folder that holds the model or the calibration inputs. Without `-o` the folder is
`hls_out/<model file name>`; if that one holds another model's design (or anything else), the next
free `hls_out/<name>-2`, `-3`, ... is used instead, so two models never overwrite each other.

`fpgagen prune`, `share` and `import-tsv` write a model file only where none is, or over an earlier
model fpgagen wrote (an ONNX file whose producer is fpgagen), and never over the model they read.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

# An ONNX file fpgagen wrote begins with ModelProto's ir_version (field 1, a one-byte varint) and
# then its producer_name (field 2): protobuf writes fields in their numbers' order.
_FPGAGEN_ONNX = re.compile(rb"\x08[\x00-\x7f]\x12\x07fpgagen")

from .atomic import absolute, interrupted_replacement, is_temporary, leftovers
from .errors import FpgagenError
from .manifest import NAME as MANIFEST
from .manifest import SCHEMA_FAMILY

DEFAULT_ROOT = Path("hls_out")
_DESIGN_ENTRIES = re.compile(
    r"^(manifest\.json|hls|rtl|vectors|sim_build|report\.html|(csim|sim|synth)_results\.json|weights\d+\.bin)$"
)
_SHOWN = 3  # foreign entries named in a refusal


def is_design_entry(name: str) -> bool:
    """Whether `name` is something `fpgagen compile`, `csim`, `sim`, `synth` or `report` writes."""
    return _DESIGN_ENTRIES.match(name) is not None


def design_source(folder: Path) -> str | None:
    """The model file an fpgagen design in `folder` was compiled from ("" if it records none),
    or None when `folder` holds no fpgagen manifest (of this version or an earlier one)."""
    try:
        manifest = json.loads((Path(folder) / MANIFEST).read_text(encoding="utf-8"))
        if str(manifest["schema"]).startswith(SCHEMA_FAMILY):
            return manifest["source"]["model"] or ""
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


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
    foreign = _foreign_entries(target)
    if foreign:
        shown = ", ".join(foreign[:_SHOWN]) + (f" and {len(foreign) - _SHOWN} more" if len(foreign) > _SHOWN else "")
        raise FpgagenError(
            f"{folder}: holds files fpgagen did not write ({shown}); fpgagen writes only into a missing or "
            "empty folder or an earlier fpgagen design: choose another -o"
        )
    return target


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
    """Entries of `folder` that are not part of an earlier fpgagen design (none: it may be written)."""
    entries = sorted(entry.name for entry in folder.iterdir() if not is_temporary(entry.name))
    if not entries:
        return []
    foreign = [name for name in entries if not is_design_entry(name)]
    if foreign:
        return foreign
    if design_source(folder) is not None or interrupted_replacement(folder, MANIFEST):
        return []
    return entries  # fpgagen's names, but no manifest says fpgagen wrote them


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
