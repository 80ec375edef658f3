"""What the command line prints: whole lines and whole tables when piped (the test runner is a pipe:
rich would assume 80 columns there), correct plurals, --json wherever a table is printed, and the
progress of long steps."""

from __future__ import annotations

import io
import json
import time

import numpy as np
import pytest
from rich.console import Console

from fpgagen.cli import progress
from fpgagen.cli.common import plural
from fpgagen.examples.graphchallenge import network
from fpgagen.frontend import read_onnx
from fpgagen.frontend.onnx_writer import write_onnx
from fpgagen.ir import Activation, Layer, Model, sparse_weights
from fpgagen.manifest import read_manifest


@pytest.fixture
def gc_model(tmp_path):
    path = tmp_path / "gc.onnx"
    write_onnx(network(64, 2), path)
    return path


def test_a_long_line_stays_one_line_when_piped(gc_model, tmp_path, run_cli):
    folder = tmp_path / ("a_folder_with_a_rather_long_name_" * 3)
    folder.mkdir()
    inputs, outputs = folder / "inputs.npy", folder / "outputs.npy"
    np.save(inputs, np.ones((4, 64)))
    result = run_cli("predict", gc_model, "--inputs", inputs, "--out", outputs)
    assert result.exit_code == 0, result.stderr
    assert "gc.onnx: 4 inputs through 2 layers in " in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("gc.onnx: ")]
    assert line.endswith(f"wrote {outputs} with shape (4, 64)")  # one line, however long


@pytest.fixture
def long_names(tmp_path):
    """A model whose layer names make every table wider than 80 columns."""
    rng = np.random.default_rng(1)
    relu = Activation(0.0, np.inf)
    layers = tuple(
        Layer(f"a_dense_layer_with_a_long_descriptive_name_{k}", f"node_{k}",
              sparse_weights(rng.standard_normal((24, 24)) * (rng.random((24, 24)) < 0.3)), np.zeros(24), relu)
        for k in range(3)
    )  # fmt: skip
    path = tmp_path / "long.onnx"
    write_onnx(Model("long", layers, "x", "y", (24,)), path)
    return path


@pytest.mark.parametrize("command", [["analyze", "--pes", "16"], ["schedule", "--board", "pynq-z2"]])
def test_tables_are_printed_whole_when_piped(command, long_names, run_cli):
    result = run_cli(command[0], long_names, *command[1:])
    assert result.exit_code == 0, result.stderr
    assert "…" not in result.stdout
    table = [line for line in result.stdout.splitlines() if "a_dense_layer_with_a_long_descriptive_name_" in line]
    assert len(table) >= 3 and all("_name_" in line for line in table)
    assert max(len(line) for line in table) > 80  # wider than rich's guess for a pipe, and not cut to it


def test_summaries_use_the_singular_for_one(tmp_path, run_cli):
    write_onnx(network(64, 1), tmp_path / "one.onnx")
    result = run_cli("compile", tmp_path / "one.onnx", "-o", tmp_path / "design", "--vectors", 1)
    assert result.exit_code == 0, result.stderr
    assert "  1 layer in 1 stage: 1 dataflow P=" in result.stdout
    assert "  1 test vector: random inputs" in result.stdout
    # why it is no faster: a 64-wide layer's fastest stage, which the U280 has room for many times
    limit = read_manifest(tmp_path / "design")["schedule"]["limit"]
    assert limit["kind"] == "engine" and f"limited by {limit['reason']}" in " ".join(result.stdout.split())
    assert [plural(n, noun) for n, noun in ((1, "layer"), (2, "stage"), (0, "vector"), (3, "latch"))] == [
        "1 layer", "2 stages", "0 vectors", "3 latches",
    ]  # fmt: skip


def test_a_design_path_with_a_space_is_warned_of_for_vitis_hls(gc_model, tmp_path, run_cli):
    spaced = run_cli("compile", gc_model, "-o", tmp_path / "my designs" / "gc", "--vectors", 1)
    assert spaced.exit_code == 0, spaced.stderr
    assert "holds a space: Vitis HLS splits" in " ".join(spaced.stderr.split())
    plain = run_cli("compile", gc_model, "-o", tmp_path / "gc", "--vectors", 1)
    assert plain.exit_code == 0 and "holds a space" not in plain.stderr


def test_prune_prints_json_on_request(gc_model, tmp_path, run_cli):
    result = run_cli("prune", gc_model, "-o", tmp_path / "pruned.onnx", "--sparsity", "0.99", "--json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    written = read_onnx(tmp_path / "pruned.onnx")
    assert [layer["nnz_after"] for layer in document["layers"]] == [layer.nnz for layer in written.layers]
    assert document["total"]["nnz_before"] == network(64, 2).nnz == 2 * 64 * 32
    assert document["method"] == "magnitude"


def test_steps_on_a_terminal_show_each_step_its_count_and_a_check_mark():
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120, color_system=None)
    with progress.Steps(console) as steps:
        steps.begin("building the RTL")
        steps.begin("simulating 3 vectors", total=3)
        steps.advance_to(2)
    shown = screen.getvalue()
    assert "building the RTL" in shown and "simulating 3 vectors" in shown
    assert "3/3" in shown and "✓" in shown


def test_steps_in_a_log_get_a_line_only_when_they_take_a_while(monkeypatch):
    monkeypatch.setattr(progress, "QUIET_SECONDS", 0.05)
    log = io.StringIO()
    console = Console(file=log, force_terminal=False, width=80)
    with progress.Steps(console) as steps:
        steps.begin("a slow step [with brackets]")
        time.sleep(0.5)
        steps.begin("a quick step")
    lines = log.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].endswith(" s  a slow step [with brackets] ...")
    # the end says how long the step took, so that the times at the left are not read as durations
    took = float(lines[1].split(" took ")[1].removesuffix(" s"))
    assert " s  a slow step [with brackets] took " in lines[1] and 0.4 <= took < 5
