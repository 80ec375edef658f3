"""The HLS back end: generated C++ built with g++ and simulated, bit for bit against the golden model.

Every design here is compiled with the Makefile's -Wall -Wextra -Werror, so each passing build also
proves the generated code warning-free. The testbench checks every layer on its own and then the
whole design; `run_csim` and `fpgagen csim` read its verdict.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from designs import CLIP, FLOOR, MLPS, NONE, RELU, compile_design, df, mlp_design, pruned_mlp, scheduled, seq
from hls_structure import structure_problems
from onnx import TensorProto, helper, numpy_helper
from plan_checks import check_design_follows_plan

from fpgagen.backends.hls import emit_hls, run_csim
from fpgagen.backends.hls.carrays import decimal_initializer, hex_initializer
from fpgagen.compile import write_design
from fpgagen.engine import plan_engine
from fpgagen.examples.graphchallenge import draw_images, network
from fpgagen.frontend import read_onnx
from fpgagen.ir import Layer, Model, Schedule, sparse_weights
from fpgagen.numerics import parse_precision
from fpgagen.passes.quantize import quantize
from fpgagen.passes.relabel import relabel
from fpgagen.schedule.apply import apply_schedule
from fpgagen.schedule.boards import load_board
from fpgagen.vectors import default_inputs, read_vectors


def assert_bit_exact(outdir: Path) -> None:
    vectors = read_vectors(outdir / "vectors")
    assert np.any(vectors.layer_outputs[-1] != 0), "a design whose outputs are all zero proves little"
    result = run_csim(outdir, outdir / "vectors")
    assert result.error is None and result.mismatch is None, result.error or str(result.mismatch)
    assert result.passed and result.vectors == vectors.batch
    assert result.nnz > 0 and result.edges_per_second > 0


# -- pruned MLPs: shapes, schedules, precisions, lane counts ---------------------------------------


@pytest.mark.parametrize("case", sorted(MLPS))
def test_pruned_mlp_csim_is_bit_exact(case, tmp_path):
    outdir = mlp_design(case, tmp_path / case)
    makefile = (outdir / "hls" / "Makefile").read_text()
    assert "-Wall -Wextra -Werror" in makefile  # the build below is warning-free by construction
    assert structure_problems((outdir / "hls" / f"{case}_top.cpp").read_text()) == []  # every kind of stage's region
    assert_bit_exact(outdir)


@pytest.mark.parametrize("units", [2, 4])
def test_issue_units_csim_is_bit_exact(units, tmp_path):
    """Dataflow stages of K issue units (K sub-channels out: the next stage merges K of them), into
    a sequential stage (which merges them into its one unit) and out of it into K units again."""
    model = pruned_mlp(
        f"units{units}", [45, 60, 33, 40, 28, 9], [RELU, CLIP, RELU, FLOOR, NONE], seed=units, density=0.35
    )
    stages = (df(0, 8, units), df(1, 4, units), seq((2, 3), 4), df(4, 8, units))
    design = scheduled(model, "w8a16", stages, 4, np.random.default_rng(2).uniform(-1, 1, (16, 45)))
    outdir = compile_design(design, tmp_path / "design", default_inputs(design, 12, seed=5))
    plan = plan_engine(design, load_board("u280"))
    assert [channel.subs for channel in plan.channels] == [4, units, units, 1]  # the reader: 4 groups of 4 lanes
    assert structure_problems((outdir / "hls" / f"{design.name}_top.cpp").read_text()) == []
    assert_bit_exact(outdir)


# -- Graph Challenge ---------------------------------------------------------------------------------


def test_graphchallenge_1024_mixed_schedule_is_bit_exact(tmp_path):
    """8 layers of the 1024-neuron network on sparse binary images: dataflow and sequential stages,
    including sequential runs in the middle and at the end."""
    stages = (df(0, 16), seq((1, 2, 3), 8), df(4, 4), df(5, 1), seq((6, 7), 16))
    design = scheduled(network(1024, 8), "w8a16", stages, 16)
    images = draw_images(1024, 24, np.random.default_rng(0)).toarray()
    outdir = compile_design(design, tmp_path / "gc", images)
    assert_bit_exact(outdir)


def test_a_load_chain_of_rows_wider_than_a_word_is_bit_exact(tmp_path):
    """Two dataflow stages with their weights in UltraRAM, rows of 16 PEs x 6 bits: the load chain's
    beats are wider than 64 bits, and the testbench compares them (the shim's wide integers had no
    equality, so Graph Challenge on the ZCU104 did not build)."""
    design = scheduled(network(1024, 2), "w8a16", (df(0, 16, weights="uram"), df(1, 16, weights="uram")), 16)
    images = draw_images(1024, 8, np.random.default_rng(0)).toarray()
    outdir = compile_design(design, tmp_path / "gc", images)
    assert json.loads((outdir / "manifest.json").read_text())["rtl"]["ports"][0]["data_bits"] > 64
    assert_bit_exact(outdir)


# -- failures are found and reported -----------------------------------------------------------------


@pytest.fixture
def mixed_design(tmp_path):
    model = pruned_mlp("corrupt", [19, 40, 24, 9], [RELU, RELU, NONE], seed=7, density=0.4)
    design = scheduled(model, "w8a16", (df(0, 4), seq((1, 2), 2)), 4, np.ones((1, 19)))
    return compile_design(design, tmp_path / "design", default_inputs(design, 10, seed=3))


def _flip_first_valid_slot(header: Path) -> None:
    """Change the weight of the first valid ROM slot of a dataflow layer's header."""
    text = header.read_text()
    start = text.index("rom[cfg::BEATS][cfg::PES] = {")
    for match in re.finditer(r"0x([0-9a-f]+)", text[start:]):
        if int(match[1], 16):
            at = start + match.start()
            flipped = f"0x{int(match[1], 16) ^ 1:0{len(match[1])}x}"
            header.write_text(text[:at] + flipped + text[at + len(match[0]) :])
            return
    raise AssertionError("no valid slot found")


def test_corrupted_weight_header_is_reported(mixed_design, run_cli):
    _flip_first_valid_slot(mixed_design / "hls" / "weights" / "stage0.h")  # layer fc0
    result = run_cli("csim", mixed_design)
    assert result.exit_code == 1
    assert "layer fc0" in result.stderr
    report = json.loads((mixed_design / "csim_results.json").read_text())
    assert report["passed"] is False and report["mismatch"]["layer"] == "fc0"


def test_corrupted_offchip_image_is_reported(mixed_design, run_cli):
    image = mixed_design / "weights0.bin"
    words = np.fromfile(image, dtype="<u4")
    second_layer = 4096 // 4  # layer fc2 starts at the next 4 KB boundary
    valid = np.flatnonzero(words[second_layer:] >> 31)
    words[second_layer + valid[0]] ^= 1  # one weight of fc2 off by one
    words.tofile(image)
    result = run_cli("csim", mixed_design)
    assert result.exit_code == 1
    report = json.loads((mixed_design / "csim_results.json").read_text())
    mismatch = report["mismatch"]
    assert mismatch["layer"] == "fc2" and mismatch["expected"] != mismatch["got"]
    assert f"layer fc2, vector {mismatch['vector']}, index {mismatch['index']}" in result.stderr


def test_csim_passes_and_writes_results(mixed_design, run_cli):
    result = run_cli("csim", mixed_design)
    assert result.exit_code == 0, result.stderr
    report = json.loads((mixed_design / "csim_results.json").read_text())
    assert report["passed"] is True and report["vectors"] == 10 and report["mismatch"] is None
    assert report["edges_per_second"] == pytest.approx(10 * report["nnz"] / report["seconds"])


def test_a_broken_channel_protocol_is_reported(mixed_design):
    """Serializers that never end a vector on a sub-channel: the per-layer check of fc0 reads the
    next vector's items as vector 0's and finds their indices out of order, before any value is
    compared."""
    engine = mixed_design / "hls" / "fpgagen_engine.h"
    text = engine.read_text()
    closing = "                items.write(end_item<Item>());\n"
    assert text.count(closing) == 1
    engine.write_text(text.replace(closing, ""))
    result = run_csim(mixed_design, mixed_design / "vectors")
    assert not result.passed and result.mismatch is None
    assert re.search(
        r"layer=fc0 vector=0 sub-channel=0: item index=\d+ value=-?\d+ breaks the channel protocol", result.error
    )


def test_a_project_that_does_not_build_is_a_failed_check(mixed_design, run_cli):
    top = mixed_design / "hls" / "corrupt_top.cpp"
    top.write_text(top.read_text().replace("fpgagen::pes<cfg>", "fpgagen::no_such_block<cfg>"))
    result = run_cli("csim", mixed_design)
    assert result.exit_code == 1
    assert "did not build" in result.stderr and "no_such_block" in result.stderr


def test_csim_without_a_project_is_bad_input(tmp_path, run_cli):
    result = run_cli("csim", tmp_path)
    assert result.exit_code == 2
    assert "no manifest.json; compile a model into it first" in result.stderr


def test_csim_inputs_without_a_manifest_is_bad_input(tmp_path, run_cli):
    (tmp_path / "hls").mkdir()
    np.save(tmp_path / "x.npy", np.zeros((2, 3)))
    result = run_cli("csim", tmp_path, "--inputs", tmp_path / "x.npy")
    assert result.exit_code == 2
    assert "manifest.json" in result.stderr
    assert not (tmp_path / "csim_results.json").exists()


# -- structure: what Vitis HLS needs for II=1 -----------------------------------------------------


def test_generated_hls_pipelines_every_hot_loop(mixed_design):
    """The engine library and a generated top (dataflow and sequential stages): every loop of a
    process is PIPELINE II=1 (or unrolled inside one, or marked not hot with its reason), and no
    array of streams is indexed by anything but a constant."""
    hls = mixed_design / "hls"
    for name in ("fpgagen_engine.h", "corrupt_top.cpp"):
        assert structure_problems((hls / name).read_text()) == [], name


BAD_PROCESS = """
template <int S, class Item>
void bad(hls::stream<Item> (&in)[S], hls::stream<Item>& out, unsigned pending) {
    for (int t = 0; t < 10; ++t) {
        out.write(in[pending % S].read());
    }
    for (int s = 0; s < S; ++s) {
#pragma HLS UNROLL
        out.write(in[s].read());
    }
    // fpgagen: not hot: an explained exception
    for (int s = 0; s < S; ++s) {
        out.write(in[s + 1].read());
    }
    for (int t = 0; t < 10; ++t) {
#pragma HLS PIPELINE II=2
        out.write(in[0].read());
    }
    for (int t = 0; t < 10; ++t) {
#pragma HLS PIPELINE II=1
        for (int s = 0; s < S; ++s) {
#pragma HLS UNROLL
            out.write(in[s].read());
        }
    }
}
"""


def test_the_structure_check_finds_bad_loops_and_stream_indices():
    assert structure_problems(BAD_PROCESS) == [
        "line 4: a loop neither pipelined (II=1) nor unrolled nor marked not hot",
        "line 7: an unrolled loop outside any pipelined loop",
        "line 15: a loop neither pipelined (II=1) nor unrolled nor marked not hot",
        "line 5: in[pending % S] indexes an array of streams dynamically",
        "line 13: in[s + 1] indexes an array of streams dynamically",
    ]


# What both probes of the PEs start with: stage 0's configuration and an entry maker.
PROBE_ENTRY = """typedef {stages}::stage0::cfg cfg;
// An entry of `x` times weight 1 at local address 0 (x = 0: an end entry).
static cfg::entry_t entry(int x) {{
    cfg::entry_t e(x == 0, x);
    bool valid;
    e.unpack_slot(static_cast<unsigned long long>(cfg::WEIGHT_BITS > 0 ? 1 : 0), valid);
    return e;
}}
"""

PE_PROBE = (
    """#include "{top}.h"
#include <cstdio>
"""
    + PROBE_ENTRY
    + """int main() {{
    static hls::stream<cfg::entry_t> entries[cfg::UNITS][cfg::PES];
    static cfg::acc_t acc{banks}[cfg::PES][cfg::ADDRESSES];
    entries[0][0].write(entry(3));  // unit 0: vector 0, then already vector 1
    entries[0][0].write(entry(0));
    entries[0][0].write(entry(5));
    entries[0][0].write(entry(0));
    for (int u = 1; u < cfg::UNITS; ++u) {{
        entries[u][0].write(entry(7));
        entries[u][0].write(entry(0));
    }}
    for (int p = 1; p < cfg::PES; ++p)
        for (int u = 0; u < cfg::UNITS; ++u) entries[u][p].write(entry(0));
    fpgagen::{pes}<cfg>(entries, acc);
    const long sum = static_cast<long>({sum}), expected = 3 + 7 * (cfg::UNITS - 1);
    std::printf("sum %ld expected %ld, unit 0 left %d entries\\n", sum, expected, int(entries[0][0].size()));
    return sum == expected && entries[0][0].size() == 2 ? 0 : 1;
}}
"""
)


@pytest.mark.parametrize("private", [False, True])
def test_a_pe_reads_no_fifo_past_its_end_entry(private, tmp_path):
    """In the DATAFLOW region a unit may issue the next vector while the PEs still take this one's
    entries (C simulation runs the processes one after the other and never shows it): the PEs must
    leave a FIFO alone once its end entry has passed, else the next vector's entries join this
    vector's sums, and its end entry counts as this vector's. Private PEs (a stream each, from
    their unit alone) likewise; their drain adds lane 0's sums over the units."""
    model = pruned_mlp("probe", [19, 40, 9], [RELU, NONE], seed=7, density=0.4)
    design = scheduled(model, "w8a16", (df(0, 4, 2, private=private), df(1, 4)), 4, np.ones((1, 19)))
    hls = compile_design(design, tmp_path / "design", default_inputs(design, 4, seed=3)) / "hls"
    shape = (
        {"banks": "[cfg::UNITS]", "pes": "private_pes", "sum": "fpgagen::lane_sum<cfg>(acc, 0, 0)"}
        if private
        else {"banks": "", "pes": "pes", "sum": "acc[0][0]"}
    )
    run_probe(hls, "pe_probe", PE_PROBE.format(top=f"{design.name}_top", stages=f"{design.name}_stages", **shape))


def run_probe(hls: Path, name: str, source: str) -> None:
    """Build `source` as hls/<name>.cpp by the project's own rule (its flags, warnings as errors),
    linked alone, and run it: it exits 0 when what it checks holds."""
    (hls / f"{name}.cpp").write_text(source)
    for step in (["make", f"bin/{name}.o"], [os.environ.get("CXX", "g++"), "-o", f"bin/{name}", f"bin/{name}.o"]):
        built = subprocess.run(step, check=False, cwd=hls, capture_output=True, text=True)
        assert built.returncode == 0, built.stdout[-1500:] + built.stderr[-3000:]
    probe = subprocess.run([f"bin/{name}"], check=False, cwd=hls, capture_output=True, text=True)
    assert probe.returncode == 0, probe.stdout


QUIET_PROBE = (
    """#include "{top}.h"
#include "weights/stage0.h"  // the drain's bias table
#include <cstdio>
"""
    + PROBE_ENTRY
    + """static hls::stream<cfg::entry_t> entries[cfg::UNITS][cfg::PES];
static hls::stream<bool> quiet;
static hls::stream<cfg::word_t> words[cfg::UNITS];
static cfg::acc_t acc{banks}[cfg::PES][cfg::ADDRESSES];
// One vector's entries: `x` at PE 0 from unit 0 (none when x = 0), then every end entry.
static bool pes(int x) {{
    if (x != 0) entries[0][0].write(entry(x));
    for (int u = 0; u < cfg::UNITS; ++u)
        for (int p = 0; p < cfg::PES; ++p) entries[u][p].write(entry(0));
    fpgagen::{pes}<cfg>(entries, acc, quiet);
    return quiet.read();
}}
// The drain of every bank word at `sum`, told the vector is `silent`: its end words, its other words.
static void drain(long sum, bool silent, int& ends, int& others) {{
    for (int p = 0; p < cfg::PES; ++p)
        for (int a = 0; a < cfg::ADDRESSES; ++a) {fill}
    quiet.write(silent);
    fpgagen::drain_words<cfg>(acc, quiet, words);
    ends = others = 0;
    for (int c = 0; c < cfg::UNITS; ++c)
        while (words[c].size() != 0) (words[c].read().end ? ends : others) += 1;
}}
int main() {{
    const bool silent = pes(0), heard = pes(3);
    const long sum = 1L << (cfg::SUM_BITS - 4);  // every output nonzero, the units' sums too
    int quiet_ends, quiet_others, ends, others;
    drain(sum, true, quiet_ends, quiet_others);
    drain(sum, false, ends, others);
    std::printf("flags %d %d; quiet drain %d end words, %d others; drain %d end words, %d others\\n", silent, heard,
                quiet_ends, quiet_others, ends, others);
    return silent && !heard && quiet_ends == cfg::UNITS && quiet_others == 0 && ends == cfg::UNITS && others > 0 ? 0 : 1;
}}
"""
)


@pytest.mark.parametrize("private", [False, True])
def test_a_quiet_vector_drains_its_end_words_alone(private, tmp_path):
    """A stage whose outputs are all zero without input (its biases negative, ReLU) skips quiet
    vectors: its PEs flag a vector that brought them no entry, and its drain then writes its end
    words alone, reading no bank (banks full of sums, which the drain told otherwise makes words
    of). The outputs are the same either way, so the bit-exact runs cannot tell a drain that never
    skips: this probe can. Shared PEs with 2 of 8 lanes a cycle, and private ones of 2 units."""
    model = pruned_mlp("quiet", [19, 40, 9], [RELU, NONE], seed=7, density=0.4, quiet=True)
    first = df(0, 4, 2, private=True, drain_lanes=2) if private else df(0, 8, drain_lanes=2)
    design = scheduled(model, "w8a16", (first, df(1, 4)), 4, np.ones((1, 19)))
    hls = compile_design(design, tmp_path / "design", default_inputs(design, 4, seed=3)) / "hls"
    assert plan_engine(design, load_board("u280")).stages[0].skips_quiet
    fill = "for (int u = 0; u < cfg::UNITS; ++u) acc[u][p][a] = sum;" if private else "acc[p][a] = sum;"
    shape = {"banks": "[cfg::UNITS]", "pes": "private_pes"} if private else {"banks": "", "pes": "pes"}
    probe = QUIET_PROBE.format(top=f"{design.name}_top", stages=f"{design.name}_stages", fill=fill, **shape)
    run_probe(hls, "quiet_probe", probe)


def test_no_state_survives_a_call(mixed_design):
    """Reset leaves no partial sums: no process keeps a static variable (accumulators are PIPO
    buffers or locals that every vector, or pass, clears before it adds), so a call ended in the
    middle of a batch leaves nothing behind for the next. The testbench also runs half a batch
    and then the whole one, both bit-exact (every csim test here)."""
    hls = mixed_design / "hls"
    for name in ("fpgagen_engine.h", "corrupt_top.cpp"):
        code = re.sub(r"//.*", "", (hls / name).read_text())
        assert re.findall(r"\bstatic\b(?!\s+const\b)", code) == [], name
    assert "run_design(g, part" in (hls / "tb_corrupt_top.cpp").read_text()


# -- generated text ----------------------------------------------------------------------------------

HOSTILE = ['*/ #error "pwned"\n// ü', "class", 'q"uote\\', "naïve λ ✓ layer", "int", "\n\r\t"]


def hostile_onnx(path: Path) -> np.ndarray:
    """A 3-layer ONNX model whose node and graph names are hostile text; returns inputs for it."""
    rng = np.random.default_rng(5)
    sizes = [12, 20, 16, 6]
    nodes, initializers, current = [], [], "x"
    for index, (n_in, n_out) in enumerate(itertools.pairwise(sizes)):
        weights = (rng.standard_normal((n_in, n_out)) * (rng.random((n_in, n_out)) < 0.5)).astype(np.float32)
        bias = rng.uniform(-0.2, 0.2, n_out).astype(np.float32)
        initializers += [numpy_helper.from_array(weights, f"w{index}"), numpy_helper.from_array(bias, f"b{index}")]
        nodes.append(helper.make_node("MatMul", [current, f"w{index}"], [f"m{index}"], name=HOSTILE[index]))
        nodes.append(helper.make_node("Add", [f"m{index}", f"b{index}"], [f"a{index}"], name=HOSTILE[index + 3]))
        current = f"a{index}"
        if index < 2:
            nodes.append(helper.make_node("Relu", [current], [f"r{index}"], name=HOSTILE[index]))
            current = f"r{index}"
    graph = helper.make_graph(
        nodes,
        HOSTILE[0],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, sizes[0]])],
        [helper.make_tensor_value_info(current, TensorProto.FLOAT, None)],
        initializer=initializers,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return rng.uniform(-1, 1, (9, sizes[0]))


def test_hostile_names_never_reach_generated_files_and_csim_inputs(tmp_path, run_cli):
    model_path = tmp_path / "hostile.onnx"
    inputs = hostile_onnx(model_path)
    np.save(tmp_path / "inputs.npy", inputs)
    schedule = Schedule((df(0, 2), seq((1, 2), 4)), 2, "u280", 250.0, "auto", "throughput")
    design = relabel(apply_schedule(quantize(read_onnx(model_path), parse_precision("w8a16")), schedule))
    outdir = tmp_path / "out"
    write_design(design, load_board("u280"), outdir, inputs, source=model_path)
    check_design_follows_plan(outdir)

    generated = [path for path in outdir.rglob("*") if path.is_file() and path.suffix != ".bin"]
    assert any(path.name.endswith(".h") for path in generated)
    for path in generated:
        assert re.fullmatch(r"[A-Za-z0-9_./-]+", str(path.relative_to(outdir))), path
        data = path.read_bytes()
        assert data.isascii(), f"{path} has non-ASCII bytes"
        text = data.decode()
        for name in HOSTILE:
            if not name.isidentifier():
                assert name not in text, f"{path} contains {name!r}"
        assert '#error "pwned"' not in text and 'q"uote' not in text

    result = run_cli("csim", outdir, "--inputs", tmp_path / "inputs.npy")
    assert result.exit_code == 0, result.stderr
    report = json.loads((outdir / "csim_results.json").read_text())
    assert report["passed"] is True and report["vectors"] == len(inputs)


def test_emitting_twice_gives_identical_files(tmp_path):
    model = pruned_mlp("twice", [30, 41, 12], [RELU, NONE], seed=11)
    design = scheduled(model, "w8a16", (df(0, 8), seq((1,), 4)), 4)
    inputs = default_inputs(design, count=4)
    for target in ("a", "b"):
        compile_design(design, tmp_path / target, inputs)
    first = {p.relative_to(tmp_path / "a"): p.read_bytes() for p in (tmp_path / "a").rglob("*") if p.is_file()}
    second = {p.relative_to(tmp_path / "b"): p.read_bytes() for p in (tmp_path / "b").rglob("*") if p.is_file()}
    assert first.keys() == second.keys() and first == second
    assert Path("weights0.bin") in first and Path("hls/weights/stage0.h") in first and Path("rtl/twice_top.v") in first


def test_output_grows_with_nonzeros_not_dense_size(tmp_path):
    """A 4096 x 4096 layer with 4096 nonzeros on 4 lanes: 4096 beats of 4 slots, row tables and biases,
    a few hundred KB; its dense weights would be 16.7M entries (over 100 MB of text)."""
    rng = np.random.default_rng(0)
    weights = np.zeros((4096, 4096))
    weights[np.arange(4096), rng.permutation(4096)] = rng.uniform(0.5, 1.0, 4096)
    model = Model("wide", (Layer("big", "big", sparse_weights(weights), np.zeros(4096), RELU),), "x", "y", (4096,))
    emit_hls(plan_engine(scheduled(model, "w8a16", (df(0, 4),), 16), load_board("u280")), tmp_path / "hls")
    assert (tmp_path / "hls" / "weights" / "stage0.h").stat().st_size < 400_000


def test_array_initializers_round_trip():
    rng = np.random.default_rng(0)
    signed = np.concatenate([rng.integers(-(2**40), 2**40, 1000), [0, -1, 1, -(2**31), 2**31 - 1]])
    parsed = [int(field) for field in decimal_initializer(signed, 7).replace("\n", "").split(",")[:-1]]
    assert parsed == signed.tolist()
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        values = rng.integers(0, np.iinfo(dtype).max, 333, dtype=np.uint64, endpoint=True).astype(dtype)
        fields = hex_initializer(values, 5).replace("\n", "").split(",")[:-1]
        assert [int(field, 16) for field in fields] == values.tolist()
        assert {len(field) for field in fields} == {2 + 2 * np.dtype(dtype).itemsize}


# -- the vendor's headers ----------------------------------------------------------------------------


@pytest.fixture
def vendor_headers(tmp_path, monkeypatch):
    """XILINX_HLS set to the open-source Xilinx headers that the hls4ml wheel carries (ap_int.h,
    hls_stream.h; it has no ap_axi_sdata.h, so that one comes from our shim)."""
    spec = importlib.util.find_spec("hls4ml")
    if spec is None:
        pytest.skip("hls4ml (pip install hls4ml==1.3.0) provides the vendor headers")
    vendor = Path(spec.origin).parent / "templates" / "vivado" / "ap_types"
    include = tmp_path / "xilinx_hls" / "include"
    include.mkdir(parents=True)
    for entry in vendor.iterdir():
        (include / entry.name).symlink_to(entry)
    assert not (include / "ap_axi_sdata.h").exists()
    shim = Path(__file__).resolve().parents[1] / "templates" / "hls" / "shim" / "ap_axi_sdata.h"
    (include / "ap_axi_sdata.h").symlink_to(shim)
    monkeypatch.setenv("XILINX_HLS", str(tmp_path / "xilinx_hls"))


def test_csim_with_vendor_headers_is_bit_exact(vendor_headers, tmp_path):
    """Build against the vendor's headers (`vendor_headers`) instead of the shim."""
    # the dataflow layer's weights share three values (a codebook) and its biases one (its bias
    # table is one row of constants); its weights are in UltraRAM, filled by the load phase from
    # the load port weights2 (the vendor's ap_uint unpacks the load image's rows); the sequential
    # stage's 64-bit beats are striped over two 32-bit ports, weights0 and weights1, which the
    # vendor's ap_uint joins
    model = pruned_mlp("vendor", [21, 34, 9], [RELU, NONE], seed=3, density=0.5, shared=((-0.5, 0.25, 0.75),))
    model = dataclasses.replace(
        model, layers=(dataclasses.replace(model.layers[0], bias=np.full(34, 0.25)), model.layers[1])
    )
    design = scheduled(model, "w16a16", (df(0, 4, weights="uram"), seq((1,), 2, channels=2)), 4, np.ones((1, 21)))
    outdir = compile_design(design, tmp_path / "vendor", default_inputs(design, 8, seed=4))
    plan = check_design_follows_plan(outdir, design)
    first = plan.stages[0]
    assert first.memory("bias").kind == "constant" and first.loaded
    assert first.encoding.codebook == (-16384, 8192, 24576)  # w16: 15 fraction bits
    assert [(port.stage, port.data_bits) for port in plan.interface.ports] == [(1, 32), (1, 32), (None, 32)]
    shutil.rmtree(outdir / "hls" / "shim")  # only the vendor's headers can make this build
    assert_bit_exact(outdir)


@pytest.mark.parametrize("case", ["private_pes", "drain_lanes"])
def test_mlp_csim_with_vendor_headers_is_bit_exact(case, vendor_headers, tmp_path):
    """MLPS cases built against the vendor's headers: the private PEs' stages (K = 1, 2, 4; loaded
    codebook weights, positions only, a dense last stage), the drain's sums over the units in the
    vendor's ap_int; drain lanes (the groups of PEs picked by the row's bits in the vendor's
    ap_uint) and quiet vectors (the PEs' flag to the drain)."""
    outdir = mlp_design(case, tmp_path / case)
    shutil.rmtree(outdir / "hls" / "shim")  # only the vendor's headers can make this build
    assert_bit_exact(outdir)


# -- boards ------------------------------------------------------------------------------------------


def test_a_board_of_ones_own_compiles_and_csims(tmp_path, run_cli):
    """The HLS project takes the board it is given (part, clock) and never looks one up by name:
    a .yaml board whose name no built-in has compiles and simulates."""
    board_file = tmp_path / "card.yaml"
    board_file.write_text(
        "name: lab-card-9\npart: xcvu9p-flga2104-2-i\ndsp: 6840\nbram36: 2160\nuram: 960\nlut: 1182240\n"
        "ff: 2364480\nmemory: DDR4\nchannels: 2\nchannel_gbps: 19.2\nclock_mhz: 200\nsource: our lab's card\n"
    )
    board = load_board(board_file)
    design = scheduled(pruned_mlp("lab", [26, 30, 7], [RELU, NONE], seed=9), "w8a16", (df(0, 4, 2), seq((1,), 2)), 4)
    outdir = tmp_path / "design"
    write_design(design, board, outdir, default_inputs(design, 6, seed=2))
    config = (outdir / "hls" / "hls_config.cfg").read_text()
    assert "part=xcvu9p-flga2104-2-i" in config and "clock=5.000ns" in config
    result = run_cli("csim", outdir)
    assert result.exit_code == 0, result.stderr
