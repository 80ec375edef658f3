"""Front ends: model files into the IR."""

from __future__ import annotations

from pathlib import Path

from ..errors import FpgagenError
from ..ir import Model
from .graphchallenge_tsv import read_graphchallenge
from .onnx_reader import read_onnx


def load_model(path: Path) -> Model:
    """An ONNX file, or a folder in the Graph Challenge TSV layout."""
    path = Path(path)
    if path.is_dir():
        return read_graphchallenge(path)
    if not path.exists():
        raise FpgagenError(f"{path}: no such file or folder")
    return read_onnx(path)


__all__ = ["load_model", "read_graphchallenge", "read_onnx"]
