"""`fpgagen sweep`: the grid, the point task, the records, the page, Dask clusters local and started
by hand, a point that does not fit, Ctrl-C."""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from designs import CLIP, NONE, RELU, pruned_mlp
from distributed import Client

from fpgagen.errors import FpgagenError
from fpgagen.examples.graphchallenge import network
from fpgagen.frontend.onnx_writer import write_onnx
from fpgagen.golden import GoldenModel
from fpgagen.numerics import parse_precision
from fpgagen.passes.quantize import quantize
from fpgagen.prepare import FrontOptions
from fpgagen.schedule.boards import builtin_boards
from fpgagen.sweep import point as point_module
from fpgagen.sweep.grid import Point, parse_grid
from fpgagen.sweep.pareto import pareto_front
from fpgagen.sweep.point import Inputs, Settings, error_against_float, run_point

BIN = Path(sys.executable).parent
# A board like the PYNQ-Z2 with 4 BRAM36: the MLP below fits it only with sequential stages.
TINY_BOARD = (Path(__file__).parent.parent / "fpgagen/schedule/boards/pynq-z2.yaml").read_text()
TINY_BOARD = TINY_BOARD.replace("name: pynq-z2", "name: tiny").replace("bram36: 140", "bram36: 4")


@pytest.fixture(scope="module")
def mlp(tmp_path_factory) -> Path:
    """A small pruned MLP: its dataflow design needs 9 BRAM36, its sequential one fewer."""
    path = tmp_path_factory.mktemp("model") / "tiny_mlp.onnx"
    write_onnx(pruned_mlp("tiny_mlp", [64, 200, 100, 10], [RELU, CLIP, NONE], seed=3), path)
    return path


@pytest.fixture(scope="module")
def graph_challenge(tmp_path_factory) -> Path:
    """Graph Challenge 1024 x 24: its dataflow designs need more block RAM than the PYNQ-Z2 has
    (169 BRAM36 of positions-only weight ROMs and tables, the board has 140)."""
    path = tmp_path_factory.mktemp("model") / "gc.onnx"
    write_onnx(network(1024, 24), path)
    return path


def records_of(outdir: Path) -> dict[str, dict]:
    log = json.loads((outdir / "sweep.json").read_text())
    return {record["id"]: record for record in log["records"]}


# The grid ---------------------------------------------------------------------------------------


def test_the_grid_is_every_combination_in_order_boards_outermost():
    grid = parse_grid("u280,pynq-z2", "w8a16,w16a16", "auto,dataflow,sequential", pes="4,16", max_errors="0.01")
    points = grid.points()
    assert len(points) == 2 * 2 * 3 * 2
    assert [p.id for p in points[:3]] == ["001", "002", "003"]
    assert (points[0].board, points[0].precision, points[0].schedule, points[0].pes) == ("u280", "w8a16", "auto", 4)
    assert (points[1].schedule, points[1].pes) == ("auto", 16)
    assert points[-1] == Point("024", "pynq-z2", "w16a16", "sequential", 16, None, None, 0.01)
    assert points[-1].label() == "pynq-z2 w16a16 sequential P=16 max error 0.01"


def test_pruning_levels_default_to_magnitude_and_nm_alone_is_one_level():
    assert parse_grid("u280", "w8a16", "auto", sparsities="0,0.5").method == "magnitude"
    assert parse_grid("u280", "w8a16", "auto", sparsities="0,0.5").sparsities == (0.0, 0.5)
    nm = parse_grid("u280", "w8a16", "auto", method="nm:2:4")
    assert (nm.method, nm.sparsities) == ("nm:2:4", (None,))
    assert parse_grid("u280", "w8a16", "auto").points()[0].method is None


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"boards": "u280,vu9p"}, "unknown board 'vu9p'"),
        ({"precisions": "w8a16,float"}, "float has no hardware"),
        ({"precisions": "w8"}, "w8"),
        ({"schedules": "auto,pipelined"}, "--schedules pipelined: not a schedule policy"),
        ({"boards": "u280,,zcu104"}, "an empty value"),
        ({"boards": "u280,u280"}, "u280 given more than once"),
        (
            {"pes": "3"},
            "--pes 3: a stage has one of 1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64 PEs",
        ),
        ({"pes": "four"}, "--pes 'four': not a whole number"),
        ({"sparsities": "0.5,1.0"}, "sparsity 1.0 is outside"),
        ({"sparsities": "0.3", "method": "nm:2:4"}, "contradicts nm:2:4"),
        ({"method": "magnitude"}, "needs a sparsity"),
        ({"max_errors": "0.1,-1"}, "--max-error -1: must be a fraction of the output range"),
        ({"max_errors": "0.1,5"}, "--max-error 5: must be a fraction of the output range"),
    ],
)
def test_bad_grid_values_are_refused_with_the_value(arguments, message):
    given = {"boards": "u280", "precisions": "w8a16", "schedules": "auto"} | arguments
    with pytest.raises(FpgagenError, match=re.escape(message)):
        parse_grid(**given)


def test_bad_input_exits_2_and_writes_nothing(run_cli, mlp, tmp_path):
    outdir = tmp_path / "sweep"
    bad_board = run_cli("sweep", mlp, "--boards", "u280,vu9p", "-o", outdir)
    assert bad_board.exit_code == 2 and "unknown board 'vu9p'" in bad_board.stderr
    bad_precision = run_cli("sweep", mlp, "--precisions", "w8a16,w0a16", "-o", outdir)
    assert bad_precision.exit_code == 2 and "w0a16" in bad_precision.stderr
    bad_check = run_cli("sweep", mlp, "--verify", "csim,lint", "-o", outdir)
    assert bad_check.exit_code == 2 and "--verify csim,lint" in bad_check.stderr
    assert not outdir.exists()


def test_an_unreachable_cluster_exits_2_and_writes_nothing(run_cli, mlp, tmp_path):
    outdir = tmp_path / "sweep"
    address = f"tcp://127.0.0.1:{free_port()}"
    result = run_cli("sweep", mlp, "--cluster", address, "--connect-timeout", "1", "-o", outdir)
    assert result.exit_code == 2
    assert f"--cluster {address}: no Dask scheduler answers there" in result.stderr
    assert not outdir.exists()


def test_a_folder_with_other_files_is_refused_and_left_alone(run_cli, mlp, tmp_path):
    outdir = tmp_path / "mine"
    outdir.mkdir()
    (outdir / "notes.txt").write_text("mine")
    result = run_cli("sweep", mlp, "-o", outdir)
    assert result.exit_code == 2 and "notes.txt" in result.stderr
    assert [p.name for p in outdir.iterdir()] == ["notes.txt"]


# Pareto fronts ---------------------------------------------------------------------------------


def test_the_pareto_front_keeps_the_points_no_other_beats_on_both_figures():
    gain = np.array([10.0, 5.0, 10.0, 20.0, 20.0, 1.0])
    cost = np.array([2.0, 1.0, 3.0, 5.0, 5.0, 1.0])
    # 2 is beaten by 0 (same gain, less cost), 5 by 1 (more gain, same cost); 3 and 4 are equal
    assert pareto_front(gain, cost).tolist() == [True, True, False, True, True, False]


# The point task, without Dask -------------------------------------------------------------------


def inputs_of(model: Path, boards: dict[str, str] | None = None) -> Inputs:
    return Inputs(model.read_bytes(), None, boards or {})


def settings(checks=("csim",), keep: Path | None = None, run: str = "test") -> Settings:
    return Settings(run=run, checks=checks, vectors=4, simulator="verilator", keep=keep)


def test_a_point_is_compiled_measured_and_checked(mlp):
    record = run_point(Point("001", "u280", "w8a16", "auto"), settings(), inputs_of(mlp))
    assert record["status"] == "ok" and record["fits"] is True and record["reason"] is None
    assert record["checks"]["csim"]["passed"] and record["checks"]["csim"]["vectors"] == 4
    estimate = record["estimate"]
    assert estimate["throughput"] == pytest.approx(estimate["clock_mhz"] * 1e6 / estimate["interval"])
    shares = {
        kind: used / estimate["budget"][kind]
        for kind, used in estimate["resources"].items()
        if estimate["budget"][kind]
    }
    assert estimate["utilization"] == max(shares.values()) and shares[estimate["scarcest"]] == estimate["utilization"]
    assert record["error"]["inputs"] == point_module.ERROR_INPUTS and record["error"]["max_abs"] > 0
    assert set(record["seconds"]) == {"compile", "error", "csim", "total"}


def test_a_point_that_does_not_fit_names_the_short_resource(mlp):
    record = run_point(
        Point("002", "tiny.yaml", "w8a16", "dataflow"), settings(), inputs_of(mlp, {"tiny.yaml": TINY_BOARD})
    )
    assert record["status"] == "does not fit" and record["fits"] is False
    assert record["short"] == ["BRAM"]
    assert re.search(
        r"tiny is short of BRAM: the smallest dataflow design needs \d+ BRAM36, the board has 4", record["reason"]
    )


def test_the_error_against_float_is_the_largest_difference_from_a_dense_float_computation():
    model = pruned_mlp("err", [20, 30, 5], [RELU, NONE], seed=4)
    design = quantize(model, parse_precision("w4a8"))
    x = np.random.default_rng(5).uniform(-1, 1, (50, 20))
    hidden = np.maximum(x @ model.layers[0].weights.toarray() + model.layers[0].bias, 0.0)
    want = hidden @ model.layers[1].weights.toarray() + model.layers[1].bias
    got = GoldenModel(design).predict(x)
    found = error_against_float(model, design, x)
    assert found["max_abs"] == pytest.approx(np.max(np.abs(got - want)), rel=1e-12)
    assert found["max_abs"] > 0.01  # 4-bit weights: far from float
    assert found["argmax_agreement"] == np.mean(np.argmax(got, 1) == np.argmax(want, 1))


def test_the_error_bound_of_a_point_goes_to_compile(mlp, monkeypatch):
    """--max-error is compile's option; until compile has it, its points are errors that say so."""
    if "max_error" in {field.name for field in fields(FrontOptions)}:
        handed = []
        real = point_module.compile_model
        monkeypatch.setattr(
            point_module, "compile_model", lambda m, o, options: handed.append(options) or real(m, o, options)
        )
        run_point(Point("001", "u280", "w8a16", "auto", max_error=0.05), settings(()), inputs_of(mlp))
        assert handed[0].front.max_error == 0.05
    else:
        record = run_point(Point("001", "u280", "w8a16", "auto", max_error=0.05), settings(()), inputs_of(mlp))
        assert record["status"] == "error" and "max_error" in record["reason"]


def test_a_pruned_point_is_pruned_and_its_error_measured_against_the_model_before_pruning(mlp):
    record = run_point(
        Point("001", "u280", "w8a16", "auto", sparsity=0.85, method="magnitude"), settings(()), inputs_of(mlp)
    )
    unpruned = run_point(Point("002", "u280", "w8a16", "auto"), settings(()), inputs_of(mlp))
    assert record["status"] == "ok"
    assert record["design"]["nnz"] < 0.6 * unpruned["design"]["nnz"]  # the MLP keeps 30% of its weights
    # against the pruned float model the error would be about the quantization's alone, as unpruned
    assert record["error"]["max_abs"] > 3 * unpruned["error"]["max_abs"]


def test_a_worker_that_does_not_see_the_sweep_folder_keeps_no_design(mlp, tmp_path):
    (tmp_path / "sweep.json").write_text(json.dumps({"run": "another sweep"}))
    record = run_point(Point("001", "u280", "w8a16", "auto"), settings((), keep=tmp_path), inputs_of(mlp))
    assert record["status"] == "error" and "is not this sweep's folder" in record["reason"]
    assert not (tmp_path / "points").exists()


# Whole sweeps ------------------------------------------------------------------------------------


def test_a_sweep_on_a_local_cluster_records_every_point_and_draws_the_page(run_cli, graph_challenge, tmp_path):
    outdir = tmp_path / "sweep"
    result = run_cli(
        "sweep", graph_challenge, "--boards", "pynq-z2", "--precisions", "w8a16,w16a16", "--schedules",
        "dataflow,sequential", "--workers", "2", "--keep-designs", "-o", outdir,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    records = records_of(outdir)
    assert sorted(records) == ["001", "002", "003", "004"]
    assert [records[i]["status"] for i in sorted(records)] == ["does not fit", "ok", "does not fit", "ok"]
    assert records["001"]["short"] == records["003"]["short"] == ["BRAM"]
    assert records["003"]["label"] == "pynq-z2 w16a16 dataflow"
    assert "pynq-z2 is short of BRAM: the smallest dataflow design needs" in records["001"]["reason"]
    for id in ("002", "004"):
        assert records[id]["checks"]["csim"]["passed"]
        design = outdir / records[id]["folder"]
        assert design == outdir / "points" / id / "design"
        assert json.loads((design / "csim_results.json").read_text())["passed"]
        manifest = json.loads((design / "manifest.json").read_text())
        assert (manifest["precision"], manifest["schedule"]["policy"]) == (
            records[id]["settings"]["precision"],
            "sequential",
        )
    assert json.loads((outdir / "sweep.json").read_text())["state"] == "complete"
    assert "4 points, 2 fit their board, 2 ok" in result.stdout
    assert len(re.findall(r"^\d{3} ", result.stdout, re.MULTILINE)) == 4  # a line per point as it finished
    page = (outdir / "sweep.html").read_text()
    assert page.count("<svg") == 2 and "<script" not in page
    assert len(re.findall(r"<td class=\"text\">\d{3}</td>", page)) == 4
    assert "pynq-z2 is short of BRAM" in page

    # a file of the user's among the kept designs keeps the folder from being replaced
    (outdir / "points" / "002" / "design" / "hls" / "proj").mkdir()
    (outdir / "points" / "002" / "design" / "hls" / "proj" / "vitis.log").write_text("mine")
    refused = run_cli("sweep", graph_challenge, "--verify", "none", "--workers", "1", "-o", outdir)
    assert refused.exit_code == 2 and "points/002/design/hls/proj" in refused.stderr, refused.stderr
    assert (outdir / "points" / "002" / "design" / "hls" / "proj" / "vitis.log").read_text() == "mine"
    shutil.rmtree(outdir / "points" / "002" / "design" / "hls" / "proj")

    # an earlier sweep's folder is replaced
    again = run_cli("sweep", graph_challenge, "--boards", "pynq-z2", "--schedules", "sequential", "--verify", "none",
                    "--workers", "1", "-o", outdir)  # fmt: skip
    assert again.exit_code == 0, again.stderr
    assert sorted(records_of(outdir)) == ["001"] and not (outdir / "points").exists()


def test_ctrl_c_cancels_the_points_left_and_keeps_the_records_in(mlp, tmp_path):
    outdir = tmp_path / "sweep"
    command = [
        str(BIN / "fpgagen"), "sweep", str(mlp), "--precisions", "w8a16,w16a16", "--schedules", "auto,dataflow,sequential",
        "--workers", "1", "-o", str(outdir),
    ]  # fmt: skip
    sweep = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (outdir / "sweep.json").is_file() or not records_of(outdir):
            assert sweep.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        sweep.send_signal(signal.SIGINT)
        _, stderr = sweep.communicate(timeout=120)
    finally:
        sweep.kill()
    assert sweep.returncode == 130, stderr
    log = json.loads((outdir / "sweep.json").read_text())
    assert log["state"] == "interrupted" and 1 <= len(log["records"]) < 6
    assert f"interrupted: {len(log['records'])} of 6 points recorded" in stderr
    assert (outdir / "sweep.html").is_file()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def cluster_by_hand(tmp_path):
    """A Dask scheduler and two single-threaded workers on localhost, started as a user would."""
    address = f"tcp://127.0.0.1:{free_port()}"
    logs = tmp_path / "dask-logs"
    logs.mkdir()

    def start(name: str, *arguments: str) -> subprocess.Popen:
        with open(logs / f"{name}.log", "w") as log:
            return subprocess.Popen([str(BIN / "dask"), *arguments, "--no-dashboard"], stdout=log, stderr=log, cwd=logs)

    started = [start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1])]
    started += [start(name, "worker", address, "--nthreads", "1", "--name", name) for name in ("w1", "w2")]
    try:
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for process in reversed(started):
            process.send_signal(signal.SIGINT)
        for process in reversed(started):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.mark.slow
def test_a_sweep_on_a_scheduler_and_two_workers_started_by_hand(run_cli, cluster_by_hand, graph_challenge, tmp_path):
    """2 boards x 2 precisions x 3 schedules with csim on Graph Challenge 1024 x 12: 12 records; the
    dataflow designs do not fit the PYNQ-Z2's block RAM, which the records say."""
    outdir = tmp_path / "sweep"
    result = run_cli(
        "sweep", graph_challenge, "--boards", "pynq-z2,zcu104", "--precisions", "w8a16,w16a16",
        "--schedules", "auto,dataflow,sequential", "--cluster", cluster_by_hand, "-o", outdir,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    records = records_of(outdir)
    assert len(records) == 12
    short = {id: r["short"] for id, r in records.items() if r["status"] == "does not fit"}
    assert short == {"002": ["BRAM"], "005": ["BRAM"]}  # pynq-z2 dataflow, both precisions
    assert "pynq-z2 is short of BRAM" in records["002"]["reason"]
    fitting = [r for r in records.values() if r["fits"]]
    assert len(fitting) == 10 and all(r["status"] == "ok" and r["checks"]["csim"]["passed"] for r in fitting)
    assert len({r["worker"] for r in records.values()}) == 2  # both workers ran points
    log = json.loads((outdir / "sweep.json").read_text())
    assert log["state"] == "complete" and log["cluster"] == f"the Dask scheduler at {cluster_by_hand}"
    page = (outdir / "sweep.html").read_text()
    assert page.count("<svg") == 2
    assert len(re.findall(r"<td class=\"text\">\d{3}</td>", page)) == 12


def test_builtin_boards_are_the_ones_the_help_names(run_cli):
    help_text = run_cli("sweep", "--help").stdout
    assert all(board in help_text for board in builtin_boards())
    assert "tcp://" in help_text and "--keep-designs" in help_text
