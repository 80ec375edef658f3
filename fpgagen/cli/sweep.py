"""`fpgagen sweep`: a grid of designs, each compiled and verified as a task on Dask distributed."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..errors import EXIT_INTERRUPTED, FpgagenError
from ..numerics import DEFAULT_PRECISION
from ..schedule.boards import builtin_boards
from ..simulate import SIMULATORS
from ..sweep.grid import parse_grid
from ..sweep.point import CHECKS, OK
from ..sweep.records import PAGE, RECORDS, check_outdir, clear_outdir
from . import app
from .common import calib_option, err, model_argument, out


@app.command()
@model_argument
@click.option(
    "-o", "--out", "outdir", required=True, type=click.Path(path_type=Path),
    help="Folder for sweep.json, sweep.html and, with --keep-designs, points/ (new, empty, or an earlier sweep's).",
)  # fmt: skip
@click.option("--boards", default="u280", show_default=True,
              help=f"Boards, comma-separated: {', '.join(builtin_boards())}, or .yaml profiles.")  # fmt: skip
@click.option("--precisions", default=DEFAULT_PRECISION, show_default=True,
              help="Fixed-point precisions wXaY, comma-separated.")  # fmt: skip
@click.option("--schedules", default="auto", show_default=True,
              help="Schedule policies, comma-separated: auto, dataflow, sequential.")  # fmt: skip
@click.option("--pes", help="PEs forced in every stage, comma-separated [default: the scheduler's choice].")
@click.option(
    "--sparsity", "sparsities",
    help="Pruning levels, comma-separated: the fraction of each layer's weights set to zero, in [0, 1).",
)  # fmt: skip
@click.option(
    "--method",
    help="Pruning method of --sparsity: magnitude (the default), nm:N:M or balanced:P. nm:N:M without "
    "--sparsity is one level.",
)
@click.option(
    "--max-error", "max_errors",
    help="Error bounds, comma-separated, handed to compile's --max-error (a compile without it records the "
    "points as errors).",
)  # fmt: skip
@click.option("--verify", default="csim", show_default=True,
              help="Checks of every point, comma-separated: csim, sim (RTL under cocotb), synth (Yosys); or none.")  # fmt: skip
@click.option("--simulator", type=click.Choice(SIMULATORS), default="verilator", show_default=True,
              help="Simulator of --verify sim.")  # fmt: skip
@calib_option
@click.option("--vectors", default=8, show_default=True, help="Test vectors per design (the first rows of --calib).")
@click.option(
    "--cluster", "address", help="A running Dask scheduler, such as tcp://host:8786 [default: a local cluster]."
)
@click.option("--workers", type=int, help="Worker processes of the local cluster [default: one per core].")
@click.option("--connect-timeout", default=30.0, show_default=True, help="Seconds to wait for the --cluster scheduler.")
@click.option(
    "--keep-designs", is_flag=True,
    help="Keep each point's design in OUT/points/<id>/design. Workers write there themselves: with --cluster, "
    "OUT must be on a filesystem every worker shares at the same path (checked before the sweep starts).",
)  # fmt: skip
@click.pass_context
def sweep(
    ctx: click.Context, model: Path, outdir: Path, boards: str, precisions: str, schedules: str, pes: str | None,
    sparsities: str | None, method: str | None, max_errors: str | None, verify: str, simulator: str,
    calib: Path | None, vectors: int, address: str | None, workers: int | None, connect_timeout: float,
    keep_designs: bool,
) -> None:  # fmt: skip
    """Compile and verify MODEL at every point of a grid, each point a task on Dask distributed.

    The grid is every combination of --boards, --precisions, --schedules, --pes, --sparsity and
    --max-error. Without --cluster the points run on a local cluster of worker processes; with
    --cluster tcp://HOST:PORT, on the workers of that Dask scheduler (start it with `dask
    scheduler`, and workers with `dask worker tcp://HOST:PORT --nthreads 1` on machines with
    fpgagen installed). The model, calibration inputs and board profiles are sent to the workers.

    OUT/sweep.json gets one record per point as it finishes: its settings, whether it fits (or the
    resource that is short), the cost model's throughput, latency and resources, the error against
    the float model, the checks and the time taken. OUT/sweep.html has Pareto plots (throughput
    against resources and against error) and a table. A point that fails is recorded with its
    reason and the sweep goes on (exit 0). Ctrl-C cancels the points not yet done, keeps the
    records in and exits 130.
    """
    # Here, not at the top: Dask distributed and matplotlib take a second to import, which every
    # other command would pay.
    from ..sweep.cluster import check_workers, dask_client
    from ..sweep.run import Sweep, prepare, run_sweep, start_log

    checks = _checks(verify)
    if vectors < 1:
        raise FpgagenError(f"--vectors {vectors}: at least one test vector is needed")
    if workers is not None and (address is not None or workers < 1):
        raise FpgagenError("--workers: a positive number of local worker processes, and only without --cluster")
    grid = parse_grid(boards, precisions, schedules, pes, sparsities, method, max_errors)
    check_outdir(outdir)
    prepared = prepare(Sweep(model, grid, checks, vectors, simulator, calib, keep_designs))
    total = len(grid.points())
    log = None
    try:
        with ExitStack() as stack:
            with err.status("starting a local Dask cluster" if address is None else f"connecting to {address}"):
                client, cluster = stack.enter_context(dask_client(address, workers, connect_timeout))
                check_workers(client)
            if not client.scheduler_info()["workers"]:
                err.print(f"{cluster} has no workers yet; waiting for one (start `dask worker {address}`)")
                client.wait_for_workers(1)
            created = not outdir.exists()
            clear_outdir(outdir)
            log = start_log(prepared, outdir, cluster)
            if keep_designs:
                _check_shared(client, outdir, prepared.run, created)
            err.print(f"{total} points of {prepared.model.name} on {cluster}")
            with Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TimeRemainingColumn(), console=err, redirect_stdout=False, redirect_stderr=False,
            ) as progress:  # fmt: skip
                task = progress.add_task("sweep", total=total)
                # On a terminal the lines go above the bar; piped, stdout gets them and stderr the bar.
                lines = progress.console if out.is_terminal and err.is_terminal else out

                def on_record(record: dict) -> None:
                    lines.print(_line(record), markup=False, highlight=False)
                    progress.advance(task)

                run_sweep(prepared, log, client, on_record)
    except KeyboardInterrupt:
        if log is not None:
            kept = len(log.records)
            err.print(
                f"interrupted: {kept} of {total} points recorded in {outdir / RECORDS}; the others were cancelled"
            )
        else:
            err.print("interrupted before the sweep started; nothing written")
        ctx.exit(EXIT_INTERRUPTED)
    records = log.records
    fitted = sum(1 for record in records if record["fits"])
    passed = sum(1 for record in records if record["status"] == OK)
    out.print(
        f"wrote {outdir / RECORDS} and {outdir / PAGE}: {len(records)} point{'s' if len(records) != 1 else ''}, "
        f"{fitted} fit their board, "
        f"{passed} ok" + (f" ({', '.join(checks)} passed)" if checks else "")
    )


def _checks(verify: str) -> tuple[str, ...]:
    names = [name.strip() for name in verify.split(",")]
    if names == ["none"]:
        return ()
    unknown = [name for name in names if name not in CHECKS]
    if unknown or len(set(names)) != len(names):
        raise FpgagenError(f"--verify {verify}: give none, or one or more of {', '.join(CHECKS)} separated by commas")
    return tuple(name for name in CHECKS if name in names)


def _check_shared(client, outdir: Path, run: str, created: bool) -> None:
    """Refuse --keep-designs when a worker does not see OUT; leave OUT as the sweep found it, less
    the earlier sweep it was about to replace."""
    from ..sweep.cluster import check_workers  # not at the top: see `sweep`

    try:
        check_workers(client, outdir.resolve(), run)
    except FpgagenError:
        clear_outdir(outdir)
        if created:
            outdir.rmdir()
        raise


def _line(record: dict) -> str:
    """One finished point, for the terminal."""
    head = f"{record['id']} {record['label']}: "
    seconds = record["seconds"].get("total")
    took = f" [{seconds:.1f} s]" if seconds is not None else ""
    if record["estimate"] is None:
        return f"{head}{record['status']}: {record['reason']}{took}"
    estimate, error = record["estimate"], record["error"]
    parts = [
        f"{estimate['throughput']:.4g} vectors/s",
        f"latency {estimate['latency_us']:.4g} us",
        f"{100 * estimate['utilization']:.1f}% of the {estimate['scarcest'].upper()}",
    ]
    if error is not None:
        parts.append(f"max error {error['max_abs']:.3g}")
    parts += [f"{name} {'pass' if check['passed'] else 'FAIL'}" for name, check in record["checks"].items()]
    if record["reason"]:
        parts.append(f"{record['status']}: {record['reason']}")
    return head + ", ".join(parts) + took
