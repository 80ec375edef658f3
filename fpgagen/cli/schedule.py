"""`fpgagen schedule`: choose dataflow or sequential execution per layer, and the PEs, for a board."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click
from rich import box
from rich.markup import escape
from rich.table import Table

from ..engine.relabel import output_rotations
from ..ir import SEQUENTIAL, Model
from ..prepare import FrontOptions, prepare
from ..schedule.boards import builtin_boards, load_board
from ..schedule.estimates import DesignEstimate, StageEstimate
from ..schedule.resources import RESOURCE_KINDS, Resources
from ..schedule.scheduler import DEFAULT_BATCH, POLICIES
from . import app
from .common import err, model_argument, objective_option, out, precision_option, print_table, print_unproven


@app.command("schedule")
@model_argument
@click.option(
    "--board",
    default="u280",
    show_default=True,
    help=f"Board profile: one of {', '.join(builtin_boards())}, or the path of a .yaml profile.",
)
@click.option(
    "--schedule",
    "policy",
    type=click.Choice(POLICIES),
    default="auto",
    show_default=True,
    help="auto: the best mix of dataflow and sequential stages; dataflow: every layer its own stage, "
    "weights on chip (a ROM, or UltraRAM loaded at a batch's start); sequential: one engine running every "
    "layer, weights streamed from off chip.",
)
@objective_option
@precision_option(float_too=False)
@click.option(
    "--calib",
    type=click.Path(path_type=Path),
    help="Representative inputs (.npy, one sample per row): set the fixed-point ranges and measure how "
    "often each activation is nonzero, which is what the cycle counts charge.",
)
@click.option(
    "--act-density",
    type=float,
    help="Assume every activation is nonzero with this probability (0 to 1) instead of measuring it; "
    "without --calib the default is 1, the worst case.",
)
@click.option("--pes", type=int, help="Give every stage this many PEs instead of choosing them.")
@click.option(
    "--batch",
    type=int,
    default=DEFAULT_BATCH,
    show_default=True,
    help="Vectors per run, for the throughput figures.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the schedule and its estimate as JSON on stdout.")
def schedule_command(
    model: Path,
    board: str,
    policy: str,
    objective: str,
    precision: str,
    calib: Path | None,
    act_density: float | None,
    pes: int | None,
    batch: int,
    as_json: bool,
) -> None:
    """Schedule MODEL on a board: per layer, dataflow or sequential, how many PEs, which memory.

    The choice is optimal for fpgagen's cost model (docs/cost-model.md) within the board's DSP,
    BRAM, URAM, LUT and FF budget and its off-chip memory channels, and is refused with the
    resource that is short when no design fits.
    """
    options = FrontOptions(precision, policy, objective, calib, pes, act_density, batch)
    prepared = prepare(model, load_board(board), options)
    if prepared.clock_note:
        err.print(f"note: {escape(prepared.clock_note)}")
    scheduled, profile = prepared.model, prepared.board
    estimate = scheduled.schedule.estimate
    print_unproven(scheduled.schedule)
    if as_json:
        limit = scheduled.schedule.limit
        document = {"precision": scheduled.precision.name, "policy": policy, "objective": objective,
                    "unproven": list(scheduled.schedule.unproven),
                    "limit": None if limit is None else asdict(limit), **estimate.to_dict()}  # fmt: skip
        click.echo(json.dumps(document, indent=2, allow_nan=False))
        return
    title = f"{estimate.model} on {profile.name} ({profile.part}), {policy}, {objective}"
    print_table(_table(estimate, title))
    out.print(
        "K: a stage's issue units (p: each with P PEs of its own); lanes: what its drain requantizes a cycle"
        + _rotated(scheduled)
    )
    throughput = estimate.vectors_per_s()
    out.print(
        f"interval {estimate.interval:,.1f} cycles, latency {estimate.latency:,.1f} cycles at "
        f"{profile.clock_mhz:g} MHz: {throughput:,.0f} vectors/s, {throughput * estimate.edges:.3e} edges/s "
        f"over a batch of {estimate.batch}; {estimate.roofline_ratio:.1%} of the board's roofline "
        f"({estimate.roofline.bound:,.0f} vectors/s)"
    )
    out.print(f"cycles assume {estimate.activity}")
    if scheduled.schedule.limit is not None:
        out.print(f"limited by {escape(scheduled.schedule.limit.reason)}")
    deep = estimate.deep_channels
    if deep:
        memory = {"bram": "block RAM", "uram": "UltraRAM"}[deep]
        out.print(
            f"channels: deep (a whole vector's items a sub-channel, in {memory}), so that stages slow on "
            f"different vectors do not hold each other up (the slowest stage alone: {estimate.bottleneck:,.1f} cycles)"
        )


def _table(estimate: DesignEstimate, title: str) -> Table:
    """One row per layer (a sequential stage adds a row for the engine its layers share)."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    columns = ("layer", "mode", "PEs", "K", "lanes", "stage", "compute", "drain", "bound")
    for column in (*columns, *(k.upper() for k in RESOURCE_KINDS)):
        table.add_column(column, justify="left" if column in ("layer", "mode", "bound") else "right")
    blank = [""] * (len(columns) - 1)
    for stage in estimate.stages:
        layers = [layer for layer in estimate.layers if layer.stage == stage.index]
        engine = _engine(stage)
        for layer in layers:
            mode = "seq" if layer.mode == SEQUENTIAL else f"df/{layer.weight_memory}"
            cycles = [f"{layer.compute:.0f}", str(layer.drain), layer.bound]
            table.add_row(
                layer.name, mode, str(layer.pes), *engine, str(layer.stage), *cycles, *_counts(layer.resources)
            )
        if stage.mode == SEQUENTIAL:
            own = sum((layer.resources for layer in layers), Resources())
            shared = Resources(*(a - b for a, b in zip(stage.resources.as_tuple(), own.as_tuple())))
            mode = f"seq/{stage.channels}ch"  # the memory channels its beats are striped over
            table.add_row(
                f"(engine {stage.index})", mode, str(stage.pes), "", "", str(stage.index), "", "", "", *_counts(shared)
            )
    table.add_section()
    table.add_row("reader", "", str(estimate.reader.lanes), *blank[:6], *_counts(estimate.reader.resources))
    table.add_row("total", *blank, *_counts(estimate.resources))
    table.add_row(estimate.board.name, *blank, *_counts(estimate.budget))
    used = (f"{a / b:.0%}" if b else "-" for a, b in zip(estimate.resources.as_tuple(), estimate.budget.as_tuple()))
    table.add_row("used", *blank, *used)
    return table


def _engine(stage: StageEstimate) -> tuple[str, str]:
    """A dataflow stage's issue units (p: private PEs) and drain lanes; nothing for a sequential
    one, whose drain takes all P."""
    if stage.mode == SEQUENTIAL:
        return "", ""
    return f"{stage.units}{'p' if stage.private else ''}", str(stage.drain_lanes or stage.pes)


def _rotated(model: Model) -> str:
    """The note on the model's last layer where the engine rotates its outputs over its PEs."""
    last = model.layers[-1]
    if output_rotations(last.numerics.weights_q, last.schedule.pes) is None:
        return ""
    return f'; {last.name}\'s outputs rotated over its PEs (docs/engine.md, "Rotated outputs")'


def _counts(resources: Resources) -> list[str]:
    return [str(value) for value in resources.as_tuple()]
