"""`fpgagen report`: one self-contained page with the plots and the definitions, whose figures
follow the vectors that were really simulated; `fpgagen sim` records them, removes its build after
a passing run unless asked to keep it, and reports its progress.

The expected figures are computed here with plain numpy from the golden model's outputs (the
reference every design matches bit for bit), not with fpgagen.performance.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

import markupsafe
import numpy as np
import pytest
from designs import RELU, compile_design, df, pruned_mlp, scheduled
from simulation import QUICK_SIMULATOR

from fpgagen.design import model_from_manifest
from fpgagen.golden import GoldenModel
from fpgagen.report import anchors, write_report
from fpgagen.report.data import gather
from fpgagen.report.page import context
from fpgagen.simulate import run_rtl_simulation
from fpgagen.templating import environment
from fpgagen.vectors import read_vectors

FIGURES = {"schedule", "cycles", "roofline", "resources", "PE", "fixed-point", "sparsity"}
DEFINED = [
    "useful MAC", "lower bound (cycles)", "efficiency", "lane efficiency", "issue units (K)", "busy, drain",
    "interval, bottleneck", "latency", "measured interval", "estimate error", "roofline", "operational intensity",
    "bandwidth used", "resource use", "clock", "PE load, imbalance", "fixed-point error", "density",
]  # fmt: skip


class Page(HTMLParser):
    """What a report page refers to: images, links, scripts, definitions."""

    def __init__(self, text: str):
        super().__init__()
        self.images: list[dict] = []
        self.links: list[str] = []
        self.scripts = 0
        self.terms: list[str] = []
        self._in_dt = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs)
        elif tag in ("a", "link"):
            self.links.append(attrs.get("href", ""))
        elif tag in ("script", "iframe", "object", "embed"):
            self.scripts += 1
        self._in_dt = tag == "dt"

    def handle_data(self, data):
        if self._in_dt:
            self.terms.append(data)
            self._in_dt = False


def decode_image(uri: str) -> tuple[str, bytes]:
    header, payload = uri.split(",", 1)
    assert header.endswith(";base64"), header
    return header.removeprefix("data:").removesuffix(";base64"), base64.b64decode(payload, validate=True)


def check_self_contained(page: Page) -> None:
    assert page.scripts == 0
    assert all(link.startswith("#") for link in page.links), page.links
    for image in page.images:
        mime, data = decode_image(image["src"])
        if mime == "image/svg+xml":
            root = ElementTree.fromstring(data)
            assert root.tag.endswith("svg")
            references = [v for e in root.iter() for k, v in e.attrib.items() if k.endswith("href")]
            assert all(ref.startswith(("#", "data:")) for ref in references)  # nothing from outside
        else:
            assert mime == "image/png" and data.startswith(b"\x89PNG\r\n\x1a\n")


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    from click.testing import CliRunner

    from fpgagen.cli import app

    folder = tmp_path_factory.mktemp("report") / "example"
    args = ["example", "graphchallenge", "--neurons", "64", "--layers", "4", "--inputs", "24", "-o", str(folder)]
    assert CliRunner().invoke(app, args).exit_code == 0
    return folder


@pytest.fixture(scope="module")
def sequential_design(example, tmp_path_factory):
    """A sequential design (weights streamed from off chip, so the roofline has a memory side)."""
    from click.testing import CliRunner

    from fpgagen.cli import app

    outdir = tmp_path_factory.mktemp("report") / "design"
    args = ["compile", str(example / "model.onnx"), "-o", str(outdir), "--schedule", "sequential", "--pes", "8",
            "--calib", str(example / "images.npy"), "--vectors", "6"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.stderr
    return outdir


def expected_useful_macs(outdir: Path, x_q: np.ndarray) -> np.ndarray:
    """Per layer, useful MACs per vector: nonzero activations times nonzero weights, densely."""
    model = model_from_manifest(outdir)
    outputs = [y.toarray() for y in GoldenModel(model).run_q(x_q, trace=True)]
    inputs = [x_q, *outputs[:-1]]
    return np.array(
        [((x != 0) @ (layer.weights.toarray() != 0).sum(axis=1)).mean() for layer, x in zip(model.layers, inputs)]
    )


def test_efficiency_in_the_report_follows_the_simulated_inputs(sequential_design, example, tmp_path, run_cli):
    outdir = shutil.copytree(sequential_design, tmp_path / "design")
    # the build is kept for the second run (a Verilator build is most of a run's time)
    assert run_cli("sim", outdir, "--simulator", QUICK_SIMULATOR, "--keep-build").exit_code == 0
    own = gather(outdir)
    assert own.vectors_folder == outdir / "vectors"

    images = np.load(example / "images.npy")
    fresh = images[-4:]
    np.save(tmp_path / "fresh.npy", fresh)
    result = run_cli("sim", outdir, "--simulator", QUICK_SIMULATOR, "--inputs", tmp_path / "fresh.npy")
    assert result.exit_code == 0, result.stderr
    sim = json.loads((outdir / "sim_results.json").read_text())
    assert sim["vectors"] == 4 and sim["vectors_folder"] == "sim_vectors"

    data = gather(outdir)
    assert data.vectors_folder == outdir / "sim_vectors"
    assert data.vectors.source == str((tmp_path / "fresh.npy").resolve())
    x_q = model_from_manifest(outdir).input_format.quantize(fresh)
    np.testing.assert_array_equal(read_vectors(outdir / "sim_vectors").x_q, x_q)
    expected = expected_useful_macs(outdir, x_q)
    found = np.array([layer.useful_macs for layer in data.performance])
    np.testing.assert_allclose(found, expected)
    before = np.array([layer.useful_macs for layer in own.performance])
    assert not np.allclose(before, expected), "the two input sets must differ for this test to mean anything"

    busy = {entry["layer"]: entry["busy_per_vector"] for entry in sim["layers"]}
    for layer, macs in zip(data.performance, expected):
        assert layer.measured == busy[layer.name]
        assert layer.efficiency >= macs / layer.pes / layer.measured  # the bound is at least the compute bound
        assert layer.efficiency <= 1.0
    page = write_report(outdir).read_text()
    assert "<code>sim_vectors</code>" in page and str((tmp_path / "fresh.npy").resolve()) in page
    for layer in data.performance:
        assert f"<td>{layer.efficiency:.3f}</td>" in page


def test_sim_removes_its_build_after_passing_unless_kept_and_reports_progress(sequential_design, tmp_path):
    outdir = shutil.copytree(sequential_design, tmp_path / "design")

    class Recorder:
        def __init__(self):
            self.steps, self.counts = [], []

        def begin(self, text, total=None):
            self.steps.append((text, total))

        def advance_to(self, completed):
            self.counts.append(completed)

    kept = run_rtl_simulation(outdir, outdir / "vectors", outdir / "sim_results.json", QUICK_SIMULATOR, keep_build=True)
    assert kept["build"] == f"sim_build/{QUICK_SIMULATOR}" and (outdir / kept["build"]).is_dir()

    heard = Recorder()  # the kept build is reused, and removed once this run has passed
    results = run_rtl_simulation(
        outdir, outdir / "vectors", outdir / "sim_results.json", QUICK_SIMULATOR, progress=heard
    )
    assert results["passed"] and results["build"] is None
    assert not (outdir / "sim_build").exists()
    assert heard.steps == [(f"building the RTL with {QUICK_SIMULATOR}", None), ("simulating 6 vectors", 6)]
    assert heard.counts and heard.counts[-1] == 6 and heard.counts == sorted(heard.counts)


@pytest.fixture(scope="module")
def reported(sequential_design, tmp_path_factory):
    """The sequential design simulated and synthesized, and its report."""
    from click.testing import CliRunner

    from fpgagen.cli import app

    outdir = shutil.copytree(sequential_design, tmp_path_factory.mktemp("reported") / "design")
    for args in (["csim", str(outdir)], ["sim", str(outdir), "--simulator", QUICK_SIMULATOR]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.stderr
    return write_report(outdir)


def test_the_report_is_one_self_contained_page_with_every_plot_and_definition(reported):
    text = reported.read_text()
    page = Page(text)
    check_self_contained(page)
    alts = " ".join(image["alt"] for image in page.images)
    assert len(page.images) == 7 and all(word in alts for word in FIGURES), alts
    assert [term for term in DEFINED if term not in page.terms] == []
    assert "bottleneck" in text and "sequential" in text
    assert "unbounded (no off-chip traffic)" not in text  # weights come from off chip: a finite intensity
    for section in ("Verification", "Schedule", "Roofline and off-chip bandwidth", "PE load balance",
                    "Fixed-point error", "Sparsity pattern of every layer"):  # fmt: skip
        assert section in text


def test_the_report_states_its_own_figures_correctly(reported):
    """Spot checks of the numbers behind the plots against independent computations."""
    outdir = reported.parent
    data = gather(outdir)
    model = model_from_manifest(outdir)
    vectors = read_vectors(outdir / "vectors")
    inputs = vectors.layer_inputs()
    for layer, load, x in zip(model.layers, data.loads, inputs):
        dense = layer.weights.toarray() != 0  # (in, out)
        per_output = (x != 0).astype(np.int64) @ dense  # useful MACs of each output, per vector
        per_pe = np.array([per_output[:, p :: layer.schedule.pes].sum() for p in range(layer.schedule.pes)])
        np.testing.assert_array_equal(load.macs, per_pe)
    floats = GoldenModel(
        type(model)(model.name, model.layers, model.input_name, model.output_name, model.input_shape)
    ).run(model.input_format.to_float(vectors.x_q.astype(np.int64)), trace=True)
    for layer, error, fixed, reference in zip(model.layers, data.errors, vectors.layer_outputs, floats):
        difference = layer.numerics.output_format.to_float(fixed) - reference.toarray()
        assert error.max_abs == pytest.approx(np.abs(difference).max())
    sim = json.loads((outdir / "sim_results.json").read_text())
    assert data.measured_interval == pytest.approx(
        (sim["total_cycles"] - sim["first_output_cycles"]) / (sim["vectors"] - 1)
    )
    # beside the RTL's first output, the cost model on the vector it ran first
    assert data.first_result_estimate == pytest.approx(sim["first_output_cycles"], rel=0.05)
    assert f"{data.first_result_estimate:,.0f}" in reported.read_text()
    # what keeps the design from a shorter interval, as the manifest records it (HTML-escaped as the page's template escapes it)
    limit = data.manifest["schedule"]["limit"]
    assert f"What limits the design's interval: {markupsafe.escape(limit['reason'])}." in reported.read_text()


def test_a_report_before_any_simulation_says_what_is_missing(example, tmp_path, run_cli):
    outdir = tmp_path / "design"
    assert run_cli("compile", example / "model.onnx", "-o", outdir, "--calib", example / "images.npy").exit_code == 0
    result = run_cli("report", outdir)
    assert result.exit_code == 0, result.stderr
    text = (outdir / "report.html").read_text()
    page = Page(text)
    check_self_contained(page)
    assert len(page.images) == 6  # all but the measured cycles
    assert "Run <code>fpgagen sim</code> to measure cycles" in text
    assert "unbounded (no off-chip traffic)" in text  # every weight on chip


def test_a_report_without_the_model_file_keeps_the_rest(tmp_path, run_cli):
    """A design written without a model file cannot be rebuilt; the page says so and shows the rest."""
    model = pruned_mlp("nomodel", [12, 10, 6], [RELU, RELU], seed=5)
    design = scheduled(model, "w8a16", (df(0, 2), df(1, 2)), 4)
    outdir = compile_design(design, tmp_path / "design", np.random.default_rng(0).uniform(-1, 1, (4, 12)))
    result = run_cli("report", outdir)
    assert result.exit_code == 0, result.stderr
    text = (outdir / "report.html").read_text()
    assert "no figures that need the model" in text
    check_self_contained(Page(text))


def test_a_report_of_a_folder_without_a_design_is_bad_input(tmp_path, run_cli):
    result = run_cli("report", tmp_path)
    assert result.exit_code == 2 and "manifest.json" in result.stderr
    assert not (tmp_path / "report.html").exists()


# -- the page in a browser ---------------------------------------------------------------------------

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--allow-file-access-from-files", "--virtual-time-budget=10000",
]  # fmt: skip

HARNESS = """<!DOCTYPE html><html><head><title>pending</title></head><body>
<iframe id="page" src="report.html" style="width:1200px;height:900px"></iframe>
<script>
window.addEventListener("load", () => {
  const page = document.getElementById("page").contentDocument;
  const images = [...page.images].map(img => ({alt: img.alt, complete: img.complete, width: img.naturalWidth}));
  const sections = [...page.querySelectorAll("h2")].map(h => h.textContent);
  const overflow = page.documentElement.scrollWidth > page.defaultView.innerWidth + 1;
  document.title = JSON.stringify({images, sections, overflow, terms: page.querySelectorAll("dt").length});
});
</script></body></html>"""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    return found


@pytest.mark.slow
def test_the_report_renders_in_headless_chromium_without_errors(reported, tmp_path):
    browser = chromium()
    folder = tmp_path / "view"
    folder.mkdir()
    shutil.copy(reported, folder / "report.html")
    (folder / "harness.html").write_text(HARNESS)
    profile = tmp_path / "profile"
    done = subprocess.run(
        [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
         "--dump-dom", (folder / "harness.html").as_uri()],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    title = done.stdout.split("<title>", 1)[1].split("</title>", 1)[0]
    assert title != "pending", "the page did not finish loading"
    found = json.loads(title.replace("&quot;", '"').replace("&amp;", "&"))
    assert len(found["images"]) == 7
    broken = [image["alt"] for image in found["images"] if not image["complete"] or image["width"] == 0]
    assert broken == [], f"images that did not decode: {broken}"
    assert len(found["sections"]) >= 10 and found["terms"] == len(DEFINED)
    console_errors = [line for line in done.stderr.splitlines() if "CONSOLE" in line and "report.html" in line]
    assert console_errors == [], console_errors
    assert "Not allowed to load" not in done.stderr and "ERR_FILE_NOT_FOUND" not in done.stderr

    shot = tmp_path / "report.png"
    subprocess.run(
        [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--window-size=1250,4000",
         f"--screenshot={shot}", (folder / "report.html").as_uri()],
        capture_output=True, text=True, timeout=180, check=True,
    )  # fmt: skip
    assert shot.stat().st_size > 50_000  # a rendered page with figures, not a blank one


def test_a_graph_challenge_design_is_set_beside_the_published_figures(reported, monkeypatch):
    """The 1024 x 120 network has two published figures; a design of another model has none. The
    example here is 64 x 4, so a figure is published for it in the test."""
    assert [figure for _, figure in anchors.published("graphchallenge_n1024_l120")] == [15.8e12, 0.94e9]
    assert anchors.published("graphchallenge_n1024_l3") == [] and anchors.published("mlp") == []
    outdir = reported.parent
    manifest = json.loads((outdir / "manifest.json").read_text())
    monkeypatch.setitem(anchors.PUBLISHED, (64, 4), [("a lab's card", 2.0e6)])
    assert manifest["model"]["name"] == "graphchallenge_n64_l4"
    page = context(gather(outdir))
    (row,) = page["published"]
    html = environment("report").get_template("report.html.j2").render(**page)
    assert "published for this Graph Challenge network" in html and "a lab&#39;s card" in html
    interval, mhz = manifest["estimate"]["totals"]["interval"], manifest["board"]["clock_mhz"]
    expected = mhz * 1e6 / interval * manifest["model"]["nnz"] / 2.0e6
    assert (row["source"], float(row["cost model"])) == ("a lab's card", pytest.approx(expected, rel=1e-2))
    assert row["RTL simulation"] != "-"  # the design was simulated
