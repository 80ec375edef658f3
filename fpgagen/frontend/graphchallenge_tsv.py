"""The Sparse DNN Graph Challenge file layout, read and written.

Files are tab-separated triples `row col value` with 1-based indices:
  n{N}-l{k}.tsv                   layer k's weights W_k (N x N), row = input neuron, col = output
  sparse-images-{N}.tsv           input images, row = image, col = neuron
  neuron{N}-l{L}-categories.tsv   1-based indices of the images still active after layer L
The layer files may sit in the folder itself or in a `neuron{N}` subfolder (the official layout).
Inference is Y = min(max(Y W + b, 0), 32) with one bias per network size.
"""

from __future__ import annotations

import itertools
import math
import re
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import FpgagenError
from ..ir import Activation, Layer, Model, sparse_weights

OFFICIAL_BIAS = {1024: -0.3, 4096: -0.35, 16384: -0.4, 65536: -0.45}
CLIP = 32.0
_LAYER_FILE = re.compile(r"^n(\d+)-l(\d+)\.tsv$")


def default_bias(neurons: int) -> float:
    """The official bias; other sizes follow the same rule, -0.3 - 0.05 * log4(N / 1024)."""
    if neurons in OFFICIAL_BIAS:
        return OFFICIAL_BIAS[neurons]
    return -0.3 - 0.05 * math.log(neurons / 1024, 4)


def _found_layer_files(folder: Path) -> Iterator[tuple[Path, dict[int, dict[int, Path]]]]:
    """Each place layer files may sit (`folder`, then its `neuron{N}` subfolders) that holds some:
    the place, and its files by network size and layer number."""
    folder = Path(folder)
    for place in [folder, *sorted(p for p in folder.glob("neuron*") if p.is_dir())]:
        found: dict[int, dict[int, Path]] = {}
        for path in place.glob("n*-l*.tsv"):
            match = _LAYER_FILE.match(path.name)
            if match:
                found.setdefault(int(match[1]), {})[int(match[2])] = path
        if found:
            yield place, found


def holds_layer_files(folder: Path) -> bool:
    """Whether `folder` is laid out as a Graph Challenge network (`layer_files` may still refuse it)."""
    return next(_found_layer_files(folder), None) is not None


def layer_files(folder: Path) -> tuple[int, list[Path]]:
    """The network size N and its layer files in order, from `folder` or `folder/neuron{N}`."""
    for place, found in _found_layer_files(folder):
        if len(found) > 1:
            sizes = ", ".join(map(str, sorted(found)))
            raise FpgagenError(f"{place}: layer files of several network sizes ({sizes}); keep one per folder")
        neurons, by_index = next(iter(found.items()))
        count = len(by_index)
        missing = sorted(set(range(1, count + 1)) - set(by_index))
        if missing:
            raise FpgagenError(f"{place}: layer file n{neurons}-l{missing[0]}.tsv is missing (layers must run 1..L)")
        return neurons, [by_index[k] for k in range(1, count + 1)]
    raise FpgagenError(f"{folder}: no Graph Challenge layer files (n{{N}}-l{{k}}.tsv) found")


def read_triples(path: Path, shape: tuple[int, int]) -> sp.coo_array:
    """A TSV of 1-based `row col value` triples as a sparse matrix, checked against `shape`: a
    problem is refused with the file and its line (counted from 1)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an empty file: refused below with our own words
            table = np.loadtxt(path, dtype=np.float64, ndmin=2)
    except OSError as exc:
        raise FpgagenError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError:
        raise FpgagenError(f"{path}: {_first_bad_line(path)}") from None
    if table.size == 0:
        raise FpgagenError(f"{path}: holds no 'row col value' line; a layer needs at least one edge")
    if table.shape[1] != 3:
        raise FpgagenError(f"{path}: expected 3 columns (row, col, value), found {table.shape[1]}")
    rows, cols, values = table[:, 0], table[:, 1], table[:, 2]
    for name, index, limit in (("row", rows, shape[0]), ("column", cols, shape[1])):
        fractional = np.flatnonzero(index != np.floor(index))
        if fractional.size:
            row = fractional[0]
            raise FpgagenError(f"{path}: line {_line_of(path, row)} has {name} {index[row]:g}, not a whole number")
        outside = np.flatnonzero((index < 1) | (index > limit))
        if outside.size:
            row = outside[0]
            raise FpgagenError(f"{path}: line {_line_of(path, row)} has {name} {index[row]:g}, outside 1..{limit}")
    infinite = np.flatnonzero(~np.isfinite(values))
    if infinite.size:
        row = infinite[0]
        raise FpgagenError(
            f"{path}: line {_line_of(path, row)} has value {values[row]:g}; weights must be finite numbers"
        )
    rows, cols = rows.astype(np.int64) - 1, cols.astype(np.int64) - 1
    _check_no_repeats(path, rows * shape[1] + cols)
    return sp.coo_array((values, (rows, cols)), shape=shape)


def _check_no_repeats(path: Path, positions: np.ndarray) -> None:
    """Refuse an edge given twice: a sparse matrix would add the two values without a word."""
    if np.all(positions[1:] > positions[:-1]):
        return  # sorted, as the official files and write_triples are: no sort needed
    order = np.argsort(positions, kind="stable")
    repeated = np.flatnonzero(positions[order][1:] == positions[order][:-1])
    if repeated.size:
        first, again = sorted(order[[repeated[0], repeated[0] + 1]])
        raise FpgagenError(
            f"{path}: line {_line_of(path, again)} repeats the edge of line {_line_of(path, first)}; "
            "each (row, col) may appear once"
        )


def _data_lines(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """The lines of `path` that numpy reads as rows: their numbers (from 1), text and fields
    (blank lines and # comments skipped, as numpy skips them)."""
    with open(path, encoding="utf-8", errors="replace") as file:
        for number, line in enumerate(file, start=1):
            fields = line.split("#", 1)[0].split()
            if fields:
                yield number, line, fields


def _line_of(path: Path, row: int) -> int:
    """The line of `path` that holds table row `row` (from 0)."""
    return next(itertools.islice(_data_lines(path), row, None))[0]


# A number as numpy's loadtxt reads one (Python's float() also takes 1_000 and non-ASCII digits).
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|infinity|nan)", re.ASCII | re.IGNORECASE)


def _first_bad_line(path: Path) -> str:
    """Why numpy could not read `path` as a table of numbers: its first line that is not UTF-8
    text or not three numbers, as the user sees it (lines counted from 1)."""
    with open(path, "rb") as file:
        for number, raw in enumerate(file, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return f"line {number} is not UTF-8 text ({exc.reason} at byte {exc.start + 1} of the line)"
    for number, line, fields in _data_lines(path):
        if len(fields) != 3:
            return f"line {number} has {len(fields)} fields, expected 3 (row, col, value): {line.strip()[:60]!r}"
        for field in fields:
            if not _NUMBER.fullmatch(field):
                return f"line {number}: {field[:30]!r} is not a number (expected 'row col value')"
    return "not a table of 'row col value' numbers"


def read_graphchallenge(folder: Path, layers: int | None = None, bias: float | None = None) -> Model:
    """A Graph Challenge network from its TSV layer files (the first `layers` of them if given)."""
    neurons, files = layer_files(folder)
    if layers is not None:
        if not 1 <= layers <= len(files):
            raise FpgagenError(f"{folder}: asked for {layers} layers, the network has {len(files)}")
        files = files[:layers]
    weights = [read_triples(path, (neurons, neurons)) for path in files]
    return graphchallenge_model(weights, default_bias(neurons) if bias is None else bias, [p.name for p in files])


def graphchallenge_model(
    weights: Sequence[sp.sparray | sp.spmatrix], bias: float, origins: Sequence[str] | None = None
) -> Model:
    """The IR of a Graph Challenge network: layer k is min(max(Y W_k + bias, 0), 32)."""
    neurons = weights[0].shape[0]
    origins = origins or [f"n{neurons}-l{k}.tsv" for k in range(1, len(weights) + 1)]
    chain = [
        Layer(
            name=f"l{index + 1}",
            origin=origin,
            weights=sparse_weights(matrix),
            bias=np.full(neurons, float(bias)),
            activation=Activation(0.0, CLIP),
        )
        for index, (matrix, origin) in enumerate(zip(weights, origins))
    ]
    return Model(
        name=f"graphchallenge_n{neurons}_l{len(chain)}",
        layers=tuple(chain),
        input_name="images",
        output_name="categories_score",
        input_shape=(neurons,),
    )


def write_triples(path: Path, matrix: sp.sparray | sp.spmatrix, value_format: str = "%.17g") -> None:
    """Write the nonzeros of `matrix` as 1-based `row col value` lines, sorted by row then column."""
    coo = sp.coo_array(matrix)
    order = np.lexsort((coo.col, coo.row))
    # The text is assembled as one byte table (a line per row, padding masked out) rather than
    # formatted line by line: a 120-layer network has millions of lines.
    fields = [
        _decimal_field(coo.row[order] + 1),
        _separator(order.size, b"\t"),
        _decimal_field(coo.col[order] + 1),
        _separator(order.size, b"\t"),
        _value_field(coo.data[order], value_format),
        _separator(order.size, b"\n"),
    ]
    table = np.hstack([text for text, _ in fields])
    keep = np.hstack([mask for _, mask in fields])
    Path(path).write_bytes(table[keep].tobytes())


def _separator(count: int, char: bytes) -> tuple[np.ndarray, np.ndarray]:
    return np.full((count, 1), ord(char), dtype=np.uint8), np.ones((count, 1), dtype=bool)


def _decimal_field(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative integers as right-aligned ASCII digits, with the mask of the digits to keep."""
    values = values.astype(np.int64)
    width = len(str(int(values.max(initial=0))))
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    digits = (values[:, None] // powers) % 10 + ord("0")
    keep = (values[:, None] >= powers) | (powers == 1)  # no leading zeros, but "0" itself stays
    return digits.astype(np.uint8), keep


def _value_field(values: np.ndarray, value_format: str) -> tuple[np.ndarray, np.ndarray]:
    """Values formatted with `value_format`; each distinct value is formatted once."""
    distinct, which = np.unique(values, return_inverse=True)
    texts = [(value_format % value).encode() for value in distinct]
    width = max(map(len, texts), default=1)
    table = np.zeros((len(texts), width), dtype=np.uint8)
    for row, text in enumerate(texts):
        table[row, : len(text)] = np.frombuffer(text, dtype=np.uint8)
    keep = np.arange(width) < np.array([len(text) for text in texts], dtype=np.int64)[:, None]
    return table[which], keep[which]


def read_categories(path: Path) -> np.ndarray:
    """The 1-based image indices of a categories file, as a sorted array."""
    try:
        values = np.loadtxt(path, dtype=np.int64, ndmin=1)
    except (OSError, ValueError) as exc:
        raise FpgagenError(f"{path}: not a list of image indices ({exc})") from None
    return np.sort(values)


def categories(final_outputs: sp.sparray | np.ndarray) -> np.ndarray:
    """The Graph Challenge truth rule: 1-based indices of rows whose sum is nonzero."""
    sums = np.asarray(final_outputs.sum(axis=1)).reshape(-1)
    return np.flatnonzero(sums != 0) + 1
