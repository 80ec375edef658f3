"""A user's files are never lost, and every way a command stops has its exit code.

Each case a new user ran into (issue 12) has a test here: compile into the model's own folder, onto
the model file or into the current folder; predict onto a folder; leftovers of killed runs; two
models with one graph name; empty calibration files; a model named `tb`; Ctrl-C. Kills and
interrupts are real signals sent to a real `fpgagen compile` process at a fixed point: right after
the design is written and before it is moved into place.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx_models import random_chain

import fpgagen.compile as compile_module
from fpgagen.atomic import is_temporary
from fpgagen.manifest import SCHEMA, read_manifest


def save_model(path: Path, graph_name: str | None = None, seed: int = 3) -> Path:
    chain = random_chain(seed)
    if graph_name is not None:
        chain.model.graph.name = graph_name
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(chain.model, path)
    return path


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path below `folder` with its bytes (None for folders)."""
    return {
        str(path.relative_to(folder)): None if path.is_dir() else path.read_bytes()
        for path in sorted(folder.rglob("*"))
    }


def compile_refused(run_cli, model: Path, target, watched: Path, message: str) -> None:
    """`fpgagen compile MODEL -o TARGET` exits 2 saying `message`, and `watched` is as it was."""
    before = snapshot(watched)
    result = run_cli("compile", model, "-o", target)
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert snapshot(watched) == before


def temporaries(*folders: Path) -> list[Path]:
    return [entry for folder in folders if folder.is_dir() for entry in folder.iterdir() if is_temporary(entry.name)]


# -- output folders ---------------------------------------------------------------------------------


def test_compile_never_writes_into_the_models_folder(tmp_path, run_cli):
    model = save_model(tmp_path / "w" / "model.onnx")
    compile_refused(run_cli, model, tmp_path / "w", tmp_path, f"{tmp_path / 'w'}: holds {model}")


def test_compile_never_turns_the_model_file_into_a_folder(tmp_path, run_cli):
    model = save_model(tmp_path / "model.onnx")
    compile_refused(run_cli, model, model, tmp_path, "exists and is not a folder")


def test_compile_into_the_current_folder(tmp_path, run_cli, monkeypatch):
    model = save_model(tmp_path / "model.onnx")
    run = tmp_path / "run"
    run.mkdir()
    monkeypatch.chdir(run)
    inode = os.stat(".").st_ino
    for _ in range(2):  # an empty folder, then an earlier design
        result = run_cli("compile", model, "-o", ".")
        assert result.exit_code == 0, result.stderr
        assert read_manifest(run)["source"]["model"] == str(model)
        assert temporaries(tmp_path, run) == []
        assert os.stat(".").st_ino == inode  # the folder itself was kept, not replaced
    monkeypatch.chdir(tmp_path)  # holds the model: refused, nothing written
    compile_refused(run_cli, model, ".", tmp_path, "holds")


def test_compile_never_writes_into_a_folder_with_files_it_did_not_write(tmp_path, run_cli):
    model = save_model(tmp_path / "model.onnx")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    design = tmp_path / "design"
    assert run_cli("compile", model, "-o", design).exit_code == 0
    (design / "notes.txt").write_text("mine now")  # a user's file in an earlier design
    for folder in (foreign, design):
        compile_refused(run_cli, model, folder, folder, f"{folder}: holds files fpgagen did not write (notes.txt)")


def test_compile_replaces_every_part_of_an_earlier_design(tmp_path, run_cli):
    model = save_model(tmp_path / "model.onnx")
    design = tmp_path / "design"
    assert run_cli("compile", model, "-o", design, "--schedule", "sequential").exit_code == 0
    assert (design / "weights0.bin").is_file()
    # what `fpgagen csim` leaves
    (design / "csim_results.json").write_text('{"passed": true, "vectors_folder": "vectors", "edges_per_second": 1}')
    assert run_cli("compile", model, "-o", design, "--schedule", "dataflow").exit_code == 0
    assert sorted(path.name for path in design.iterdir()) == ["hls", "manifest.json", "rtl", "vectors"]
    assert {stage["mode"] for stage in read_manifest(design)["schedule"]["stages"]} == {"dataflow"}


def test_compile_never_touches_a_users_files_inside_an_earlier_design(tmp_path, run_cli):
    """The manifest lists what compile wrote: a Vitis HLS project run in OUTDIR/hls (as the README
    says), or a note in rtl/, is found and the folder refused, while what fpgagen's own commands
    build there (csim's hls/bin, sim's sim_build, the vectors of their --inputs) is replaced."""
    model = save_model(tmp_path / "model.onnx")
    design = tmp_path / "design"
    assert run_cli("compile", model, "-o", design).exit_code == 0
    for built in ("hls/bin/tb_top.o", "sim_build/verilator/Vtop", "csim_vectors/x.npy", "sim_vectors/x.npy"):
        (design / built).parent.mkdir(parents=True)
        (design / built).write_text("built")
    assert run_cli("compile", model, "-o", design).exit_code == 0
    assert sorted(path.name for path in design.iterdir()) == ["hls", "manifest.json", "rtl", "vectors"]
    assert not (design / "hls" / "bin").exists()

    # a generated file the user has tuned is theirs now too
    tuned = design / "hls" / "hls_config.cfg"
    tuned.write_text(tuned.read_text() + "# tuned by hand\n")
    (design / "hls" / "fpgagen_prj" / "solution1").mkdir(parents=True)
    (design / "hls" / "fpgagen_prj" / "solution1" / "top.v").write_text("synthesized")
    (design / "rtl" / "my_notes.txt").write_text("mine")
    (design / "vectors" / "empty").mkdir()
    shown = "hls/fpgagen_prj, hls/hls_config.cfg (changed since fpgagen wrote it), rtl/my_notes.txt and 1 more"
    compile_refused(run_cli, model, design, design, f"{design}: holds files fpgagen did not write ({shown})")


def test_files_named_like_fpgagens_are_the_users_unless_fpgagen_wrote_them(tmp_path, run_cli):
    """At a design's top, compile's own files must be in its manifest, and the other commands'
    outputs (results, the report) are known by their content: a file of the user's of the same name
    is refused, and `report` does not overwrite a report.html of the user's."""
    model = save_model(tmp_path / "model.onnx")
    design = tmp_path / "design"
    assert run_cli("compile", model, "-o", design).exit_code == 0
    for name, text in (
        ("weights7.bin", "mine"),
        ("synth_results.json", '{"mine": 1}'),
        ("report.html", "<html><title>my notes</title></html>"),
    ):
        (design / name).write_text(text)
        compile_refused(run_cli, model, design, design, f"{design}: holds files fpgagen did not write ({name})")
        if name == "report.html":
            result = run_cli("report", design)
            assert result.exit_code == 2, result.stderr
            assert f"{design / name}: exists and fpgagen did not write it" in " ".join(result.stderr.split())
            assert (design / name).read_text() == text
        (design / name).unlink()
    assert run_cli("report", design).exit_code == 0  # fpgagen's own report, replaced by the next compile
    assert run_cli("compile", model, "-o", design).exit_code == 0


def test_a_design_of_an_earlier_fpgagen_version_is_replaced_too(tmp_path, run_cli):
    """A design whose manifest has an older schema is still fpgagen's, and is replaced when it
    lists its files; an fpgagen that did not list them leaves fpgagen unable to tell its files
    from the user's, so the folder is refused and left as it is."""
    model = save_model(tmp_path / "model.onnx")
    design = tmp_path / "design"
    assert run_cli("compile", model, "-o", design).exit_code == 0
    manifest = json.loads((design / "manifest.json").read_text())
    (design / "manifest.json").write_text(json.dumps(manifest | {"schema": "fpgagen.manifest/6"}))
    assert run_cli("compile", model, "-o", design).exit_code == 0
    assert read_manifest(design)["schema"] == SCHEMA

    unlisted = {key: value for key, value in manifest.items() if key != "files"}
    (design / "manifest.json").write_text(json.dumps(unlisted | {"schema": "fpgagen.manifest/1"}))
    compile_refused(run_cli, model, design, design, "whose manifest does not list the files it wrote")


def test_default_folder_is_named_after_the_model_file(tmp_path, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # Two PyTorch exports: both graphs are called main_graph.
    first = save_model(tmp_path / "a" / "first.onnx", "main_graph", seed=3)
    second = save_model(tmp_path / "a" / "second.onnx", "main_graph", seed=4)
    # Two files of one name in two folders.
    same_x = save_model(tmp_path / "x" / "model.onnx", seed=5)
    same_y = save_model(tmp_path / "y" / "model.onnx", seed=6)
    expected = [(first, "first"), (second, "second"), (same_x, "model"), (same_y, "model-2"), (same_x, "model")]
    for model, folder in expected:
        result = run_cli("compile", model)
        assert result.exit_code == 0, result.stderr
        assert f"wrote hls_out/{folder} " in result.stdout
    for model, folder in expected:
        assert read_manifest(tmp_path / "hls_out" / folder)["source"]["model"] == str(model)
    assert "hls_out/model holds something else; writing hls_out/model-2" in run_cli("compile", same_y).stderr


def test_a_folder_being_written_by_a_live_run_is_left_alone(tmp_path, run_cli):
    model = save_model(tmp_path / "model.onnx")
    design = tmp_path / "design"
    assert run_cli("compile", model, "-o", design).exit_code == 0
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as other:
        busy = design / f".fpgagen-{other.pid}-abc123.partial"
        busy.mkdir()
        result = run_cli("compile", model, "-o", design)
        other.kill()
    assert result.exit_code == 2 and "another fpgagen run is writing into it" in result.stderr
    assert busy.is_dir()


def dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    return int(done.stdout)


def test_a_replacement_killed_halfway_is_recognized_and_redone(tmp_path, run_cli):
    """A kill in the middle of swapping a new design in: the manifest left first, into the `.old`
    temporary, so the half-swapped folder is never taken for a design, but the next compile
    recognizes it as its own and finishes the job."""
    model = save_model(tmp_path / "model.onnx")
    design = tmp_path / "design"
    assert run_cli("compile", model, "-o", design).exit_code == 0
    old = design / f".fpgagen-{dead_pid()}-abc123.old"
    old.mkdir()
    for name in ("manifest.json", "hls"):
        (design / name).rename(old / name)
    assert run_cli("csim", design).exit_code == 2  # no manifest: not a design
    result = run_cli("compile", model, "-o", design)
    assert result.exit_code == 0, result.stderr
    assert temporaries(design) == [] and (design / "hls").is_dir()
    assert read_manifest(design)["source"]["model"] == str(model)

    # The same, but the user has put a file in the half-swapped folder since: the lists of the
    # two designs the dead run was swapping (its .old and .partial) tell it from fpgagen's.
    old.mkdir()
    for name in ("manifest.json", "rtl"):
        (design / name).rename(old / name)
    (design / "vectors" / "mine.txt").write_text("mine")
    compile_refused(run_cli, model, design, design, "holds files fpgagen did not write (vectors/mine.txt)")


def test_files_a_user_adds_while_compile_works_are_kept(tmp_path, run_cli, monkeypatch):
    """compile looks again right before it swaps its design in."""
    model = save_model(tmp_path / "model.onnx")
    design = tmp_path / "design"
    assert run_cli("compile", model, "-o", design).exit_code == 0
    write_design = compile_module.write_design

    def meanwhile(*args, **kwargs):
        (design / "rtl" / "late.txt").write_text("added during the compile")
        return write_design(*args, **kwargs)

    monkeypatch.setattr(compile_module, "write_design", meanwhile)
    result = run_cli("compile", model, "-o", design)
    assert result.exit_code == 2 and "holds files fpgagen did not write (rtl/late.txt)" in result.stderr
    assert (design / "rtl" / "late.txt").read_text() == "added during the compile"
    assert temporaries(design) == [] and read_manifest(design)["source"]["model"] == str(model)


def test_a_manifest_of_ones_own_does_not_make_a_folder_fpgagens(tmp_path, run_cli):
    """Only an fpgagen manifest (its schema) lists fpgagen's files."""
    model = save_model(tmp_path / "model.onnx")
    folder = tmp_path / "mine"
    (folder / "rtl").mkdir(parents=True)
    (folder / "rtl" / "mine.v").write_text("module mine; endmodule")
    (folder / "manifest.json").write_text(json.dumps({"files": {"rtl/mine.v": "0" * 64}}))
    compile_refused(run_cli, model, folder, folder, "holds files fpgagen did not write (manifest.json, rtl)")


def test_what_killed_commands_leave_in_a_design_does_not_block_the_next_compile(tmp_path, run_cli):
    """A killed report or synth leaves a dead temporary at the top, or Yosys's files in rtl/."""
    model = save_model(tmp_path / "model.onnx")
    design = tmp_path / "design"
    assert run_cli("compile", model, "-o", design).exit_code == 0
    (design / f".report.html.fpgagen-{dead_pid()}-abc123.partial").write_text("half a report")
    (design / "rtl" / "synth_stat.json").write_text("{}")
    result = run_cli("compile", model, "-o", design)
    assert result.exit_code == 0, result.stderr
    assert temporaries(design) == [] and not (design / "rtl" / "synth_stat.json").exists()


# -- predict --out ---------------------------------------------------------------------------------


def test_predict_never_writes_onto_a_folder_or_an_input(tmp_path, run_cli):
    model = save_model(tmp_path / "model.onnx")
    np.save(tmp_path / "x.npy", random_chain(3).inputs)
    (tmp_path / "out").mkdir()
    (tmp_path / "notes.txt").write_text("keep me")
    before = snapshot(tmp_path)
    for out, message in (
        ("out", "is a folder"),
        ("x.npy", "is an input of this command"),
        ("model.onnx", "is an input of this command"),
        ("notes.txt", "exists and is not a .npy array"),
    ):
        result = run_cli("predict", model, "--inputs", tmp_path / "x.npy", "--out", tmp_path / out)
        assert result.exit_code == 2 and f"{tmp_path / out}: {message}" in result.stderr
    assert snapshot(tmp_path) == before
    assert run_cli("predict", model, "--inputs", tmp_path / "x.npy", "--out", tmp_path / "y.npy").exit_code == 0
    assert run_cli("predict", model, "--inputs", tmp_path / "x.npy", "--out", tmp_path / "y.npy").exit_code == 0


# -- killed and interrupted runs ---------------------------------------------------------------------

# `fpgagen compile` that sends itself a signal once the design is written, before it is moved into place.
_SIGNALLED_COMPILE = """
import os, signal, sys
import fpgagen.compile as compile_module
from fpgagen.cli import main

write, chosen = compile_module.write_design, getattr(signal, sys.argv[1])

def write_then_signal(*args, **kwargs):
    written = write(*args, **kwargs)
    os.kill(os.getpid(), chosen)
    return written

compile_module.write_design = write_then_signal
sys.argv = ["fpgagen", "compile", *sys.argv[2:]]
main()
"""


def signalled_compile(signal_name: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _SIGNALLED_COMPILE, signal_name, *map(str, args)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize("earlier", [False, True], ids=["new folder", "earlier design"])
def test_leftovers_of_a_killed_compile_are_cleaned_by_the_next_run(earlier, tmp_path, run_cli):
    model = save_model(tmp_path / "model.onnx")
    design = tmp_path / "design"
    if earlier:
        assert run_cli("compile", model, "-o", design).exit_code == 0
        before = snapshot(design)
    killed = signalled_compile("SIGKILL", model, "-o", design)
    assert killed.returncode == -signal.SIGKILL
    assert len(temporaries(tmp_path, design)) == 1  # what SIGKILL leaves
    if earlier:
        assert {name: data for name, data in snapshot(design).items() if ".fpgagen-" not in name} == before
    else:
        assert not design.exists()
    result = run_cli("compile", model, "-o", design)
    assert result.exit_code == 0, result.stderr
    assert temporaries(tmp_path, design) == []


@pytest.mark.parametrize("earlier", [False, True], ids=["new folder", "earlier design"])
@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_an_interrupted_compile_exits_130_and_leaves_nothing(signal_name, earlier, tmp_path, run_cli):
    model = save_model(tmp_path / "model.onnx")
    design = tmp_path / "design"
    if earlier:
        assert run_cli("compile", model, "-o", design).exit_code == 0
    before = snapshot(tmp_path)
    interrupted = signalled_compile(signal_name, model, "-o", design)
    assert interrupted.returncode == 130, interrupted.stderr
    assert "interrupted" in interrupted.stderr and "Traceback" not in interrupted.stderr
    assert snapshot(tmp_path) == before


# The console script, interrupted while it loads the command line: the import of fpgagen.cli sends
# SIGINT to the process itself, as a Ctrl-C in the first second would.
_INTERRUPTED_LOAD = """
import os, signal, sys

class Interrupting:
    def find_spec(self, name, path=None, target=None):
        if name == "fpgagen.cli":
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, Interrupting())
from fpgagen.command import main
sys.argv = ["fpgagen", "--help"]
main()
"""


def test_ctrl_c_while_the_command_line_loads_exits_130_without_a_traceback():
    interrupted = subprocess.run(
        [sys.executable, "-c", _INTERRUPTED_LOAD], capture_output=True, text=True, check=False, timeout=60
    )
    assert interrupted.returncode == 130, interrupted.stderr
    assert "interrupted" in interrupted.stderr and "Traceback" not in interrupted.stderr
    assert "Usage" not in interrupted.stdout


def test_a_reader_that_goes_away_does_not_change_the_outcome(tmp_path):
    """`fpgagen compile ... 2>&1 | head -1`: the design is written and the exit code is compile's."""
    model = save_model(tmp_path / "model.onnx")
    closed = subprocess.Popen(
        [sys.executable, "-c", "from fpgagen.command import main; main()", "compile", model, "-o", tmp_path / "design"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    closed.stdout.close()  # before it prints anything
    assert closed.wait(timeout=300) == 0
    assert (tmp_path / "design" / "manifest.json").is_file()


# -- exit codes -----------------------------------------------------------------------------------------


def test_an_unexpected_exception_is_an_internal_error(tmp_path, run_cli, monkeypatch):
    model = save_model(tmp_path / "model.onnx")

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(compile_module, "plan_engine", broken)
    before = snapshot(tmp_path)
    result = run_cli("compile", model, "-o", tmp_path / "design")
    assert result.exit_code == 3
    assert "internal error: RuntimeError: a bug" in result.stderr and "Traceback" not in result.stderr
    debug = run_cli("--debug", "compile", model, "-o", tmp_path / "design")
    assert debug.exit_code == 3 and "Traceback" in debug.stderr and "a bug" in debug.stderr
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", ["compile", "predict", "schedule", "analyze"])
def test_calibration_without_rows_is_bad_input(command, tmp_path, run_cli):
    model = save_model(tmp_path / "model.onnx")
    np.save(tmp_path / "empty.npy", random_chain(3).inputs[:0])
    np.save(tmp_path / "x.npy", random_chain(3).inputs)
    extra = {
        "compile": ["-o", tmp_path / "design"],
        "predict": ["--inputs", tmp_path / "x.npy", "--out", tmp_path / "y.npy"],
    }
    before = snapshot(tmp_path)
    result = run_cli(command, model, "--calib", tmp_path / "empty.npy", *extra.get(command, []))
    assert result.exit_code == 2
    assert f"{tmp_path / 'empty.npy'}: holds no rows" in result.stderr
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", ["csim", "sim"])
def test_simulating_no_inputs_is_bad_input(command, tmp_path, run_cli):
    """Zero vectors would 'pass' bit-exact while checking nothing."""
    model = save_model(tmp_path / "model.onnx")
    design = tmp_path / "design"
    assert run_cli("compile", model, "-o", design).exit_code == 0
    np.save(tmp_path / "empty.npy", random_chain(3).inputs[:0])
    before = snapshot(tmp_path)
    result = run_cli(command, design, "--inputs", tmp_path / "empty.npy")
    assert result.exit_code == 2
    assert f"{tmp_path / 'empty.npy'}: holds no input vectors" in result.stderr
    assert snapshot(tmp_path) == before


def test_an_output_that_cannot_be_written_is_named_as_the_user_gave_it(tmp_path, run_cli):
    """Not as the hidden temporary fpgagen builds it in."""
    model = save_model(tmp_path / "model.onnx")
    (tmp_path / "dangling").symlink_to(tmp_path / "missing" / "folder")
    result = run_cli("compile", model, "-o", tmp_path / "dangling")
    assert result.exit_code == 2
    assert f"{tmp_path / 'dangling'}: cannot be written" in result.stderr and ".partial" not in result.stderr
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("graph_name", ["TB-classifier", "tb", "tb_top"])
def test_models_named_like_the_testbench_simulate(graph_name, tmp_path, run_cli):
    design = tmp_path / "design"
    assert run_cli("compile", save_model(tmp_path / "model.onnx", graph_name), "-o", design).exit_code == 0
    result = run_cli("csim", design)
    assert result.exit_code == 0, result.stderr + result.stdout
    assert "C simulation passed" in result.stdout
