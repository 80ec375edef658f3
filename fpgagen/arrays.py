"""Reading and writing user arrays (.npy), with errors that name the file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .atomic import atomic_file
from .errors import FpgagenError
from .golden import flatten_inputs
from .ir import Model

NPY_MAGIC = b"\x93NUMPY"  # how every .npy file begins (numpy.lib.format)


def read_array(path: Path | None) -> np.ndarray | None:
    """Load a .npy file, with an error that names it when it cannot be used."""
    if path is None:
        return None
    path = Path(path)
    if not path.is_file():
        raise FpgagenError(f"{path}: no such file")
    with path.open("rb") as file:
        if file.read(len(NPY_MAGIC)) != NPY_MAGIC:  # else numpy takes it for a pickle and says so
            raise FpgagenError(f"{path}: not a .npy file (write arrays with numpy.save)")
    try:
        return np.load(path, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001  (numpy raises many types for a damaged file)
        raise FpgagenError(f"{path}: not a readable .npy array ({exc})") from None


def write_array(path: Path, array: np.ndarray) -> None:
    with atomic_file(path) as work, open(work, "wb") as handle:
        np.save(handle, array)


def read_calibration(model: Model, path: Path | None) -> np.ndarray | None:
    """Calibration inputs for `model` from a .npy file (None without one): at least one row."""
    if path is None:
        return None
    calib = flatten_inputs(model, read_array(path), str(path))
    if calib.shape[0] == 0:
        raise FpgagenError(f"{path}: holds no rows; calibration needs at least one sample")
    return calib
