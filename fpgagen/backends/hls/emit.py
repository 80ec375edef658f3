"""Write the Vitis HLS project of an engine plan: templates filled from `context.plan_design`.

`emit_hls(plan, folder)` writes the project into `folder` (OUTDIR/hls); the off-chip weight images
of its sequential stages (OUTDIR/weights<k>.bin, the plan's `offchip_image`) are written by the
caller, once for both back ends. It writes plainly; the caller makes the whole output atomic. The
same plan always gives byte-identical files.
"""

from __future__ import annotations

from pathlib import Path

import jinja2

from ...engine import EnginePlan
from ...templating import environment, template_bytes
from .carrays import decimal_initializer, hex_initializer
from .context import DataflowStage, Design, SequentialStage, plan_design

_STATIC = ("fpgagen_engine.h", "fpgagen_tb.h", "shim/ap_int.h", "shim/hls_stream.h", "shim/ap_axi_sdata.h")


def emit_hls(plan: EnginePlan, folder: Path) -> None:
    """Write the HLS project of an engine plan into `folder`."""
    folder = Path(folder)
    design = plan_design(plan)
    (folder / "weights").mkdir(parents=True, exist_ok=True)
    (folder / "shim").mkdir(exist_ok=True)
    for name in _STATIC:
        (folder / name).write_bytes(template_bytes("hls", name))
    env = environment("hls")
    for template, target in (
        ("top.h.j2", f"{design.top}.h"),
        ("top.cpp.j2", f"{design.top}.cpp"),
        ("tb.cpp.j2", testbench_file(design.top)),
        ("Makefile.j2", "Makefile"),
        ("run_hls.tcl.j2", "run_hls.tcl"),
        ("hls_config.cfg.j2", "hls_config.cfg"),
        ("README.md.j2", "README.md"),
    ):
        _write(folder / target, env.get_template(template).render(d=design))
    for stage in design.stages:
        if stage.sequential:
            _write(folder / stage.header, _sequential_header(env, design, stage))
        else:
            _write(folder / stage.header, _dataflow_header(env, design, stage))


def testbench_file(top: str) -> str:
    """The C testbench's file: `tb_` and the top function's name, which ends in `_top`, so that it
    can never be the name of another file of the project (csim finds it by this name)."""
    return f"tb_{top}.cpp"


def _dataflow_header(env: jinja2.Environment, design: Design, stage: DataflowStage) -> str:
    return env.get_template("weights_dataflow.h.j2").render(
        d=design,
        s=stage,
        guard=_guard(stage),
        row_start=hex_initializer(stage.tables.row_start),
        row_beats=hex_initializer(stage.tables.row_beats),
        rom=hex_initializer(stage.rom),
        bias=decimal_initializer(stage.tables.bias),
    )


def _sequential_header(env: jinja2.Environment, design: Design, stage: SequentialStage) -> str:
    return env.get_template("weights_sequential.h.j2").render(
        d=design,
        s=stage,
        guard=_guard(stage),
    )


def _guard(stage: DataflowStage | SequentialStage) -> str:
    """Include guard of a weights header, by stage number: unique whatever the layers are called."""
    return f"FPGAGEN_STAGE{stage.number}_TABLES_H"


def _write(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8"))
