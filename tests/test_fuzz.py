"""Differential fuzzing: random sparse MLPs through the whole compiler, checked against references
that share no code with it.

A case is a random chain from tests/onnx_models.py (every supported ONNX op form, opsets 9 to 21)
with random calibration and held-out inputs of one distribution, compiled with options drawn from
its seed (precision or --max-error, schedule policy). It must hold that:

- `fpgagen predict MODEL --precision float` gives onnxruntime's float32 outputs;
- `fpgagen predict OUTDIR` (the design's exact numerics) is as far from onnxruntime as the
  compile reported, and within --max-error on the calibration inputs and twice that on held-out
  inputs (relative to the output range on the calibration inputs) when one was asked for; it
  equals the design's own golden test vectors bit for bit;
- the C simulation of the HLS project matches the golden model bit for bit, on the test vectors
  and on new inputs (the model rebuilt from the manifest);
- on a sample, so does the RTL (Icarus in the default run, Verilator in the slow one).

The default run checks a few seeds and every regression case (tests/fuzz_regressions.json: each
failure the fuzzer ever found, kept); `pytest -m slow` runs two hundred more.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx_models import onnxruntime_outputs, random_chain, random_inputs
from simulation import QUICK_SIMULATOR

from fpgagen.manifest import read_manifest
from fpgagen.vectors import read_vectors

CALIBRATION_ROWS, HELD_OUT_ROWS = 256, 256
MAX_ERROR = 0.01
FLOAT_TOLERANCE = 1e-5  # onnxruntime computes in float32, fpgagen's reference in float64
REPORT_TOLERANCE = 1e-4  # of the output range: the reported error against onnxruntime's
REGRESSIONS = json.loads((Path(__file__).parent / "fuzz_regressions.json").read_text())
DEFAULT_SEEDS = [0, 1, 2, 3]
SLOW_SEEDS = range(100, 300)
# An RTL sample: --max-error formats differ per layer, sequential stages share one engine among them.
RTL_SEEDS = [35]


@dataclass(frozen=True)
class Case:
    seed: int
    model: Path
    calib: Path
    held_out: Path
    options: tuple[str, ...]

    @property
    def max_error(self) -> float | None:
        return float(self.options[self.options.index("--max-error") + 1]) if "--max-error" in self.options else None


def draw_case(seed: int, folder: Path) -> Case:
    """The model, its inputs and the compile options of fuzz case `seed`."""
    chain = random_chain(seed)
    rng = np.random.default_rng(seed + 1_000_000)
    sample_shape = chain.inputs.shape[1:]
    model, calib, held_out = folder / "model.onnx", folder / "calib.npy", folder / "held_out.npy"
    onnx.save(chain.model, model)
    np.save(calib, random_inputs(rng, CALIBRATION_ROWS, sample_shape))
    np.save(held_out, random_inputs(rng, HELD_OUT_ROWS, sample_shape))
    numerics = [("--max-error", str(MAX_ERROR)), ("--precision", "w8a16"), ("--precision", "w16a16"),
                ("--precision", "w4a8"), ("--max-error", "0.05")][seed % 5]  # fmt: skip
    policy = ["auto", "dataflow", "sequential"][int(rng.integers(3))]
    return Case(seed, model, calib, held_out, (*numerics, "--schedule", policy))


def output_range(reference: np.ndarray) -> float:
    """The outputs' range (for a constant output, its size): computed here, not by fpgagen."""
    spread = float(reference.max() - reference.min())
    return spread if spread > 0 else (float(np.abs(reference).max()) or 1.0)


def range_error(reference: np.ndarray, got: np.ndarray, scale: float | None = None) -> float:
    """Largest |got - reference| relative to `scale`, by default the reference's own range."""
    return float(np.max(np.abs(got - reference)) / (scale or output_range(reference)))


def predict(run_cli, source: Path, inputs: Path, out: Path, *options) -> np.ndarray:
    result = run_cli("predict", source, "--inputs", inputs, "--out", out, *options)
    assert result.exit_code == 0, result.stderr
    return np.load(out)


def check_case(case: Case, folder: Path, run_cli, rtl: str | None = None) -> None:
    """Compile `case` and check it against the references; `rtl` names a simulator for the RTL too."""
    design = folder / "design"
    compiled = run_cli("compile", case.model, "-o", design, "--calib", case.calib, *case.options)
    if compiled.exit_code == 2 and "cannot be met" in compiled.stderr:
        assert case.max_error is not None and not design.exists()
        best = float(compiled.stderr.split("the output is off by ")[1].split()[0])
        assert best > case.max_error
        return
    assert compiled.exit_code == 0, compiled.stderr
    calib, held_out = np.load(case.calib), np.load(case.held_out)

    # The float reference is onnxruntime's.
    floats = predict(run_cli, case.model, case.calib, folder / "float.npy", "--precision", "float")
    reference = onnxruntime_outputs(case.model, calib)
    assert np.max(np.abs(floats - reference)) <= FLOAT_TOLERANCE * max(1.0, np.max(np.abs(reference)))

    # The design's numerics: as far from float as reported, within the bound asked for.
    fixed = predict(run_cli, design, case.calib, folder / "fixed.npy")
    manifest = read_manifest(design)
    reported = manifest["numerics"]["measured"]
    assert reported["inputs"] == "calibration" and reported["samples"] == calib.shape[0]
    assert abs(range_error(reference, fixed) - reported["max_error"]) <= REPORT_TOLERANCE
    if case.max_error is not None:
        assert range_error(reference, fixed) <= case.max_error + REPORT_TOLERANCE
        # Other inputs, relative to the output range the design was calibrated for.
        held_fixed = predict(run_cli, design, case.held_out, folder / "held_fixed.npy")
        held_reference = onnxruntime_outputs(case.model, held_out)
        assert range_error(held_reference, held_fixed, output_range(reference)) <= 2 * case.max_error

    # predict OUTDIR is what the hardware is checked against: the design's golden test vectors.
    vectors = read_vectors(design / "vectors")
    last = manifest["layers"][-1]["formats"]["output"]
    frac = int(last.split(".")[1])
    on_vectors = predict(run_cli, design, case.calib, folder / "vectors.npy")[list(vectors.calibration_rows)]
    np.testing.assert_array_equal(on_vectors, vectors.layer_outputs[-1] * 2.0**-frac)

    csim = run_cli("csim", design)
    assert csim.exit_code == 0, csim.stderr + csim.stdout
    csim_new = run_cli("csim", design, "--inputs", case.held_out)
    assert csim_new.exit_code == 0, csim_new.stderr + csim_new.stdout
    if rtl:
        sim = run_cli("sim", design, "--simulator", rtl)
        assert sim.exit_code == 0, sim.stderr + sim.stdout


@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_fuzz_sample(seed, tmp_path, run_cli):
    check_case(draw_case(seed, tmp_path), tmp_path, run_cli)


@pytest.mark.parametrize("seed", [case["seed"] for case in REGRESSIONS])
def test_fuzz_regression(seed, tmp_path, run_cli):
    check_case(draw_case(seed, tmp_path), tmp_path, run_cli)


@pytest.mark.parametrize("seed", RTL_SEEDS)
def test_fuzz_rtl_sample(seed, tmp_path, run_cli):
    case = draw_case(seed, tmp_path)
    assert case.max_error is not None and "sequential" in case.options  # what this sample is for
    # Icarus builds a small design in seconds, Verilator in about a minute.
    check_case(case, tmp_path, run_cli, rtl=QUICK_SIMULATOR)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_fuzz_large(seed, tmp_path, run_cli):
    check_case(draw_case(seed, tmp_path), tmp_path, run_cli, rtl="verilator" if seed % 40 == 0 else None)
