"""Speed-up of `fpgagen sweep` from distribution: one 12-point C-simulation sweep on local Dask
clusters of 1 and of 2 worker processes, in the same run.

The sweep: Graph Challenge 1024 x 16 (default), boards u280 and u250, precisions w8a16 and
w16a16, schedules auto, dataflow and sequential; every point compiled, its error measured and its
HLS C++ built (g++, one job per point) and simulated. Each configuration does what the command
does: start the local cluster, run every point, write sweep.json and sweep.html, close the cluster;
the time covers all of it. A ratio is reported only when both runs recorded every point as passing
C simulation with the same figures. Beside it, the points' own times added up ("busy", over the
wall time: how many points ran at once) and the CPU time of the sweep and its cluster (over the
wall time: how many cores it got), and how many cores two busy loops got just before each run. On
a loaded machine the 2 workers run 2 points at once but get less than 2 cores, and each point
takes longer.

For reference, the same 12 points as a shell loop of `fpgagen compile` and `fpgagen csim` (whose
build runs two g++ jobs), the best a user gets from two cores without the sweep (--no-loop skips
it). The machine is shared: the load average is recorded beside each run, and --repeats runs the
configurations alternately several times.

Target: 2 workers at least 1.6x faster than 1. Results merge into bench/results/sweep.json.

    nice python bench/bench_sweep.py
    nice python bench/bench_sweep.py --layers 12 --repeats 2 --no-loop
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from recording import machine, merge_record, now

from fpgagen.examples.graphchallenge import network
from fpgagen.frontend.onnx_writer import write_onnx
from fpgagen.sweep.cluster import dask_client
from fpgagen.sweep.grid import parse_grid
from fpgagen.sweep.run import Sweep, prepare, run_sweep, start_log

RESULTS = Path(__file__).resolve().parent / "results" / "sweep.json"
TARGET = 1.6
BOARDS, PRECISIONS, SCHEDULES = "u280,u250", "w8a16,w16a16", "auto,dataflow,sequential"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--neurons", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-loop", action="store_true", help="skip the shell-loop reference")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="fpgagen-bench-sweep-") as folder:
        work = Path(folder)
        model = work / "model.onnx"
        write_onnx(network(args.neurons, args.layers), model)
        grid = parse_grid(BOARDS, PRECISIONS, SCHEDULES)
        sweep = Sweep(model, grid, ("csim",), vectors=8, simulator="verilator")
        runs = {1: [], 2: []}
        reference = None
        for repeat in range(args.repeats):
            for workers in (1, 2):
                cores = available_cores()
                seconds, cpu, load, records = timed_sweep(sweep, workers, work / f"sweep-{workers}-{repeat}")
                check(records, len(grid.points()))
                reference = reference or _figures(records)
                if _figures(records) != reference:
                    raise SystemExit(f"the {workers}-worker sweep recorded other figures than the first run")
                # Busy: the points' own times added up; over the wall time, how many ran at once. CPU
                # over wall time: how many cores the sweep got. With 2 workers, a busy time that grows
                # while the cores got stay below 2 means the machine had no second core to give.
                busy = sum(record["seconds"]["total"] for record in records)
                runs[workers].append(
                    {
                        "seconds": seconds,
                        "busy_seconds": busy,
                        "cpu_seconds": cpu,
                        "load": load,
                        "cores_free_before": cores,
                    }
                )
                print(f"{workers} worker(s), run {repeat + 1}: {seconds:.1f} s; points busy {busy:.1f} s "
                      f"({busy / seconds:.2f} at once); CPU {cpu:.1f} s ({cpu / seconds:.2f} cores); "
                      f"load average {load[0]:.2f} -> {load[1]:.2f}; two busy loops got {cores:.2f} cores just before")  # fmt: skip
        loop = None if args.no_loop else timed_loop(model, grid.points(), work / "loop")

    one = statistics.median(run["seconds"] for run in runs[1])
    two = statistics.median(run["seconds"] for run in runs[2])
    ratio = one / two
    record = {
        "model": f"graphchallenge {args.neurons} x {args.layers}",
        "grid": {"boards": BOARDS, "precisions": PRECISIONS, "schedules": SCHEDULES, "verify": "csim"},
        "points": len(grid.points()),
        "runs": {f"{workers} worker(s)": found for workers, found in runs.items()},
        "one_worker_seconds": one,
        "two_workers_seconds": two,
        "speedup": ratio,
        "target_speedup": TARGET,
        "meets_target": ratio >= TARGET,
        "shell_loop": loop,
        "speedup_over_shell_loop": loop["seconds"] / two if loop else None,
        "machine": machine(),
        "when": now(),
    }
    merge_record(args.out, f"n{args.neurons}-l{args.layers}-12-points-csim", record)
    print(f"12 points, csim: 1 worker {one:.1f} s, 2 workers {two:.1f} s: {ratio:.2f}x "
          f"(target {TARGET}x: {'met' if ratio >= TARGET else 'NOT met'})")  # fmt: skip
    if loop:
        print(f"  shell loop of fpgagen compile and csim (make -j2): {loop['seconds']:.1f} s; "
              f"the 2-worker sweep is {loop['seconds'] / two:.2f}x faster")  # fmt: skip
    print(f"  wrote {args.out}")


_SPIN = "import time\nend = time.perf_counter() + {seconds}\nwhile time.perf_counter() < end: pass\nprint(time.process_time())"


def available_cores(seconds: float = 3.0) -> float:
    """How many cores the machine gives two busy loops at our priority right now: the most any
    2-worker sweep could get."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", _SPIN.format(seconds=seconds)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    return sum(float(spinner.communicate()[0]) for spinner in spinners) / seconds


def timed_sweep(sweep: Sweep, workers: int, outdir: Path) -> tuple[float, float, tuple[float, float], list[dict]]:
    """The whole sweep as the command runs it: wall time, the CPU time of this process and of the
    cluster's (its processes and their g++ are waited for, so they count as children once closed),
    the 1-minute load average before and after, and the records."""
    load = os.getloadavg()[0]
    cpu = _cpu_seconds()
    started = time.perf_counter()
    prepared = prepare(sweep)
    with dask_client(None, workers, timeout=30) as (client, cluster):
        log = start_log(prepared, outdir, cluster)
        run_sweep(prepared, log, client)
    seconds = time.perf_counter() - started
    return seconds, _cpu_seconds() - cpu, (load, os.getloadavg()[0]), log.records


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def check(records: list[dict], points: int) -> None:
    failed = [r["id"] for r in records if r["status"] != "ok" or not r["checks"]["csim"]["passed"]]
    if len(records) != points or failed:
        raise SystemExit(f"the sweep did not pass every point ({len(records)} records, failed: {failed})")


def _figures(records: list[dict]) -> dict:
    """What must not depend on the number of workers: each point's estimate, error and verdict."""
    return {r["id"]: (r["estimate"], r["error"], r["checks"]["csim"]["vectors"]) for r in records}


def timed_loop(model: Path, points: list, folder: Path) -> dict:
    """The points one after the other with the command line, as a shell loop would run them."""
    fpgagen = Path(sys.executable).parent / "fpgagen"
    load = os.getloadavg()[0]
    started = time.perf_counter()
    for point in points:
        design = folder / point.id
        compile_command = [str(fpgagen), "compile", str(model), "-o", str(design), "--board", point.board,
                           "--precision", point.precision, "--schedule", point.schedule]  # fmt: skip
        subprocess.run(compile_command, check=True, capture_output=True)
        subprocess.run([str(fpgagen), "csim", str(design)], check=True, capture_output=True)
    seconds = time.perf_counter() - started
    print(f"shell loop: {seconds:.1f} s (load average {load:.2f} -> {os.getloadavg()[0]:.2f})")
    return {"seconds": seconds, "load": (load, os.getloadavg()[0])}


if __name__ == "__main__":
    main()
