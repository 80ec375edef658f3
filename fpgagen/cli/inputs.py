"""The vectors `fpgagen csim` and `fpgagen sim` run: the design's own, or the golden vectors of
--inputs, kept in the design folder so that the figures computed later use the same inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rich.markup import escape

from ..atomic import atomic_directory
from ..design import model_from_manifest
from ..errors import FpgagenError
from ..manifest import read_manifest
from ..progress import Progress
from ..vectors import golden_vectors, idle_layers, write_vectors
from .common import err


def vectors_of(outdir: Path, inputs: np.ndarray | None, inputs_path: Path | None, folder: str, steps: Progress) -> Path:
    """OUTDIR's own vectors folder without `inputs`; else OUTDIR/`folder`, (re)written with the
    golden vectors of `inputs`. Warns when a layer gets no work from them."""
    if inputs is None:
        own = Path(outdir) / read_manifest(outdir)["vectors"]
        if not own.is_dir():
            raise FpgagenError(f"{outdir}: no {own.name}/ folder; give --inputs")
        return own
    if inputs.size == 0:
        raise FpgagenError(f"{inputs_path or 'inputs'}: holds no input vectors; a simulation needs at least one")
    steps.begin("golden outputs of the inputs")
    model = model_from_manifest(outdir)
    source = str(Path(inputs_path).resolve()) if inputs_path else "inputs"
    vectors = golden_vectors(model, inputs, source)
    target = Path(outdir) / folder
    with atomic_directory(target) as work:
        write_vectors(model, vectors, work)
    idle = idle_layers(model, vectors)
    if idle:
        err.print(
            f"[yellow]warning:[/] no vector of {escape(source)} gives {', '.join(idle)} any work, "
            "so this run does not verify those layers"
        )
    return target
