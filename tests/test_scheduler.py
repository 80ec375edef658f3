"""The scheduler: optimal for the cost model (against brute force), within the board, and clear when
nothing fits; board profiles; the `fpgagen schedule` command."""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import replace

import numpy as np
import pytest
from plan_checks import check_design_follows_plan

from fpgagen.compile import write_design
from fpgagen.engine.clock import engine_clocked
from fpgagen.engine.geometry import MAX_OUT_LANES, STRIPES, UNITS, drain_lane_choices, loadable
from fpgagen.engine.plan import plan_engine
from fpgagen.errors import DoesNotFit, FpgagenError
from fpgagen.examples.graphchallenge import draw_images, network
from fpgagen.frontend.onnx_writer import write_onnx
from fpgagen.ir import DATAFLOW, SEQUENTIAL, Activation, Layer, Model, Schedule, Stage, sparse_weights
from fpgagen.numerics import parse_precision
from fpgagen.passes.prune import prune
from fpgagen.passes.quantize import quantize
from fpgagen.passes.relabel import relabel
from fpgagen.schedule import scheduler
from fpgagen.schedule.activity import Activity
from fpgagen.schedule.apply import DATAFLOW_PES, SEQUENTIAL_PES, apply_schedule
from fpgagen.schedule.boards import Board, builtin_boards, load_board
from fpgagen.schedule.cost_model import CostModel
from fpgagen.schedule.resources import Resources, board_budget, price
from fpgagen.schedule.scheduler import schedule

U280 = load_board("u280")


def random_chain(sizes: list[int], seed: int, density: float = 0.3, precision: str = "w8a16") -> Model:
    """A quantized chain of ReLU layers with random sparse weights."""
    rng = np.random.default_rng(seed)
    layers = []
    for index, (n_in, n_out) in enumerate(itertools.pairwise(sizes)):
        dense = rng.standard_normal((n_in, n_out)) * (rng.random((n_in, n_out)) < density)
        layers.append(
            Layer(f"fc{index}", f"fc{index}", sparse_weights(dense), 0.1 * rng.standard_normal(n_out), Activation(0.0))
        )
    model = Model(f"chain{seed}", tuple(layers), "x", "y", (sizes[0],))
    return quantize(model, parse_precision(precision))


def board(**changes) -> Board:
    return replace(U280, name="tiny", shell_bram36=0, shell_lut=0, **changes)  # every resource as given


# Brute force ---------------------------------------------------------------------------------


def _run_options(cost: CostModel, run: tuple[int, ...], policy: str, pes: int | None) -> list:
    """Every stage that can run these consecutive layers, as the engine allows (docs/engine.md)."""
    options = []
    if len(run) == 1 and policy != SEQUENTIAL:
        options += [
            cost.dataflow(run[0], p, units, loaded, private, choose_lanes=True)  # its drain lanes: test_cost_model
            for p in DATAFLOW_PES
            if pes in (None, p)
            if p <= MAX_OUT_LANES or not cost.is_last(run[0])  # the last stage's dense beats (below)
            for units in UNITS
            if units <= p and drain_lane_choices(cost.shape(run[0], p), units, cost.is_last(run[0]))
            for loaded in (False, True)
            if not loaded or (cost.board.has_free_uram and loadable(cost.shape(run[0], p)))
            for private in (False, True)
            if not private or cost.private_fits(run[0], p, units)  # the engine's rule (test_cost_model)
        ]
    if policy != DATAFLOW:
        options += [
            cost.sequential(run[0], run[-1], p, channels)
            for p in SEQUENTIAL_PES
            if pes in (None, p)
            for channels in STRIPES
            if channels <= cost.board.channels and cost.sequential_shape(run[0], run[-1], p, channels).buildable
        ]
    return options


def _key(option) -> tuple[float, ...]:
    """What the brute force compares of a stage: resources, memory channels, interval, and the
    latency the scheduler counts."""
    channels = option.stage.channels if option.stage.mode == SEQUENTIAL else 0
    return (*option.resources.as_tuple(), channels, option.interval, _searched(option))


def _undominated(options: list) -> list:
    """The options no other is at least as good as in every respect (the first of equal ones): a
    design keeps its best interval and latency, and still fits, with a dominated stage replaced by
    the one that dominates it, so the optimum is among these. It keeps the grids small: 18 values of
    P, 3 of K and two weight memories make over a hundred stages a layer."""
    keys = [_key(option) for option in options]

    def beaten(i: int) -> bool:
        return any(
            j != i and all(a <= b for a, b in zip(keys[j], keys[i])) and (keys[j] != keys[i] or j < i)
            for j in range(len(keys))
        )

    return [option for i, option in enumerate(options) if not beaten(i)]


def _along(shape: list[int], axis: int, values) -> np.ndarray:
    """`values` laid along one axis of a grid of `shape`, ready to broadcast."""
    view = [1] * len(shape)
    view[axis] = len(values)
    return np.asarray(values, dtype=np.float64).reshape(view)


def brute_force(cost: CostModel, policy: str, objective: str, pes: int | None = None):
    """(interval, latency) of the best design found by trying every one, or None if none fits.

    Every partition of the layers into runs, every stage for every run: the designs of one
    partition are a grid, evaluated at once with numpy broadcasting.
    """
    count = len(cost.layers)
    reader = cost.reader()
    room = np.array(board_budget(cost.board).as_tuple()) - reader.resources.as_tuple()
    best = None
    for cuts in itertools.product([False, True], repeat=count - 1):
        runs, start = [], 0
        for index, cut in enumerate([*cuts, True]):
            if cut:
                runs.append(tuple(range(start, index + 1)))
                start = index + 1
        if policy == SEQUENTIAL and len(runs) != 1:
            continue
        options = [_undominated(_run_options(cost, run, policy, pes)) for run in runs]
        if not all(options):
            continue
        shape = [len(o) for o in options]
        used = [
            sum(_along(shape, i, [o.resources.as_tuple()[k] for o in opts]) for i, opts in enumerate(options))
            for k in range(5)
        ]
        seq = sum(  # memory channels taken
            _along(shape, i, [o.stage.channels if o.stage.mode == SEQUENTIAL else 0 for o in opts])
            for i, opts in enumerate(options)
        )
        fits = np.broadcast_to(seq <= cost.board.channels, shape).copy()
        for k in range(5):
            fits &= np.broadcast_to(used[k] <= room[k], shape)
        interval = np.full(shape, float(reader.interval))
        latency = np.full(shape, float(reader.latency))
        for i, opts in enumerate(options):
            interval = np.maximum(interval, _along(shape, i, [o.interval for o in opts]))
            latency = latency + _along(shape, i, [_searched(o) for o in opts])
        if not fits.any():
            continue
        primary, secondary = (interval, latency) if objective == "throughput" else (latency, interval)
        low = primary[fits].min()
        tied = fits & (primary <= low * (1 + 1e-9) + 1e-9)
        candidate = (low, secondary[tied].min())
        if (
            best is None
            or candidate[0] < best[0] * (1 - 1e-9) - 1e-9
            or (abs(candidate[0] - best[0]) <= 1e-9 * best[0] + 1e-9 and candidate[1] < best[1])
        ):
            best = candidate
    if best is None:
        return None
    return best if objective == "throughput" else (best[1], best[0])


def searched(estimate) -> float:
    """The latency the scheduler minimizes (estimates.searched_latency): the reader's, every
    dataflow stage's latency or load, whichever is longer, every sequential stage's both."""
    return estimate.reader.latency + sum(_searched(stage) for stage in estimate.stages)


def assert_least_latency(estimate, least: float, what: str) -> None:
    """The latency program stops within its relative gap (scheduler.LATENCY_GAP) of the least
    latency of its candidates, which leave out the reader's: never below `least`, and at most
    least / (1 - gap), the gap being relative to the design found (HiGHS's mip_rel_gap)."""
    found, reader = searched(estimate), estimate.reader.latency
    assert found >= least * (1 - 1e-9), what
    assert found - reader <= (least - reader) / (1 - scheduler.LATENCY_GAP), what


def _searched(stage) -> float:
    return stage.latency + stage.load if stage.mode == SEQUENTIAL else max(stage.latency, stage.load)


def _search_alone(monkeypatch) -> None:
    """The latency objective's design as its search found it, without the throughput design that
    may replace it when sooner (scheduler._sooner): the brute force checks the search."""
    monkeypatch.setattr(scheduler, "_sooner", lambda problem, stages, estimate, *rest: (stages, estimate))


def _budget(cost: CostModel, quantile: float, channels: int) -> Board:
    """A board whose resources sit at a quantile of what one dataflow stage per layer uses, so
    that the budgets bind and mixed designs win."""
    per_stage = np.array(
        [cost.dataflow(i, p).resources.as_tuple() for p in DATAFLOW_PES for i in range(len(cost.layers))],
        dtype=np.float64,
    )
    dsp, bram, _, lut, ff = (int(v) + 1 for v in np.quantile(per_stage, quantile, axis=0) * len(cost.layers))
    return replace(
        cost.board, name=f"q{quantile}-{channels}ch", dsp=dsp, bram36=bram, lut=lut, ff=ff, channels=channels,
        shell_bram36=0, shell_lut=0,
    )  # fmt: skip


def _activity(model: Model, kind: str, seed: int) -> Activity:
    if kind == "calibration":  # nonuniform: some inputs are never zero, some often are
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((64, model.in_features)) * (
            rng.random((64, model.in_features)) < rng.random(model.in_features)
        )
        return Activity.from_calibration(model, x)
    return Activity.uniform(model, 0.7)


CHAINS = [  # sizes, seed, weight density, activity
    ([12, 40, 7, 30], 1, 0.3, "uniform"),
    ([33, 9, 64, 16], 2, 0.3, "calibration"),
    ([20, 70, 5, 18, 40], 3, 0.3, "uniform"),
    ([300, 40, 500, 64], 5, 0.3, "calibration"),
    ([64, 24, 48, 10, 6, 20], 4, 0.3, "uniform"),
    ([257, 208, 113, 128, 24], 75, 0.42, "uniform"),  # where the channel limit decides
    ([39, 125, 196, 173, 166], 28, 0.11, "uniform"),
]


@pytest.mark.parametrize("sizes, seed, density, activity_kind", CHAINS)
@pytest.mark.parametrize("objective", ["throughput", "latency"])
def test_the_schedule_is_as_good_as_the_best_of_every_design(
    sizes, seed, density, activity_kind, objective, monkeypatch
):
    """Brute force over all partitions, modes and PEs, on a roomy board and on budgets that bind
    (down to one memory channel); every policy; each optimum (or refusal) must agree."""
    _search_alone(monkeypatch)
    model = random_chain(sizes, seed, density)
    activity = _activity(model, activity_kind, seed)
    roomy = CostModel(model, U280, activity)
    budgets = [_budget(roomy, q, channels=1) for q in (0.1, 0.2, 0.5)]
    for target in (U280, _budget(roomy, 0.3, channels=2), *budgets):
        cost = CostModel(model, target, activity)
        for policy in ("auto", DATAFLOW, SEQUENTIAL):
            expected = brute_force(cost, policy, objective)
            if expected is None:
                with pytest.raises(FpgagenError, match=target.name):
                    schedule(model, target, policy, objective, activity)
                continue
            estimate = schedule(model, target, policy, objective, activity).schedule.estimate
            what = f"{target.name} {policy} {objective}"
            if objective == "throughput":
                assert estimate.bottleneck == pytest.approx(expected[0], rel=1e-9), what
            # the latency among the designs of least interval, too, is the integer program's
            # within its gap (the chain 64-24-48-10-6-20 at a tenth of the U280 on one channel:
            # 921.73 cycles against the least 920.93, 0.09%)
            assert_least_latency(estimate, expected[1], what)
            assert estimate.resources.fits(board_budget(target)), what


@pytest.mark.parametrize("sizes, seed, density, activity_kind", CHAINS[:4])
def test_the_least_latency_stays_exact_when_the_resource_table_is_coarsened(
    sizes, seed, density, activity_kind, monkeypatch
):
    """The dynamic program over units of the scarcest resource rounds them down when its table would
    be too large; its chain may then not fit, and the design must still be the optimum."""
    monkeypatch.setattr(scheduler, "_DP_CELLS", 100)
    _search_alone(monkeypatch)
    model = random_chain(sizes, seed, density)
    activity = _activity(model, activity_kind, seed)
    roomy = CostModel(model, U280, activity)
    for target in (U280, *(_budget(roomy, q, channels=c) for q, c in ((0.2, 1), (0.3, 1), (0.4, 2)))):
        expected = brute_force(CostModel(model, target, activity), "auto", "latency")
        if expected is None:
            with pytest.raises(FpgagenError, match=target.name):
                schedule(model, target, "auto", "latency", activity)
            continue
        estimate = schedule(model, target, "auto", "latency", activity).schedule.estimate
        assert_least_latency(estimate, expected[1], target.name)


def test_the_latency_search_ends_when_the_program_answers_above_its_best_design(monkeypatch):
    """The latency program stops within a relative gap (LATENCY_GAP), so a wider search may answer
    with a design worse than the best one already found; the search must then end with that best
    one (it once asked the same program forever: Graph Challenge 4096 x 120 calibrated)."""
    model = random_chain([64, 24, 48, 10, 6, 20], 4)
    problem = scheduler.Candidates(CostModel(model, U280, Activity.uniform(model, 0.6)), "auto").problem()
    searches = []
    least_among = scheduler._least_latency_among

    def above_the_limit(sub, binding):
        design = least_among(sub, binding)
        searches.append(design)
        assert len(searches) < 50, "the latency search does not end"
        # the first answer far above any limit, every later one further still
        design.latency += 1e6 * (1 + min(len(searches), 2))
        return design

    monkeypatch.setattr(scheduler, "_least_latency_among", above_the_limit)
    found = scheduler.least_latency(problem)
    assert found.latency == searches[0].latency
    assert len(searches) > 1


def test_a_tight_budget_mixes_dataflow_and_sequential_stages_and_beats_both():
    model = random_chain([64, 24, 48, 10, 6, 20], 4)
    activity = Activity.uniform(model, 0.6)
    # (at 0.15 of it, with P any multiple of 4, the design is all dataflow; at 0.1 it mixes and
    # no all-dataflow design fits)
    tight = _budget(CostModel(model, U280, activity), 0.1, channels=1)
    auto = schedule(model, tight, activity=activity).schedule
    assert {stage.mode for stage in auto.stages} == {DATAFLOW, SEQUENTIAL}
    for policy in (DATAFLOW, SEQUENTIAL):
        try:
            pure = schedule(model, tight, policy, activity=activity).schedule.estimate.bottleneck
        except FpgagenError:
            continue
        assert auto.estimate.bottleneck < pure


def test_runs_priced_up_to_an_interval_are_the_runs_within_it():
    """The scheduler prices only the sequential runs within the least interval of the dataflow
    stages (`Candidates.problem`): the runs it gets are exactly those of all the runs within it,
    and its design is the one found with every run priced."""
    model = random_chain([64, 24, 48, 10, 6, 20, 30, 12], 4)
    activity = Activity.uniform(model, 0.6)
    cost = CostModel(model, U280, activity)
    firsts = range(len(model.layers))
    every = {(run.stage, run.interval) for first in firsts for run in cost.sequential_runs(first, 4)}
    for limit in sorted({interval for _, interval in every})[::3]:
        priced = {(run.stage, run.interval) for first in firsts for run in cost.sequential_runs(first, 4, limit=limit)}
        assert priced == {(stage, interval) for stage, interval in every if interval <= limit}
    for budget in (U280, _budget(cost, 0.5, channels=2)):
        candidates = scheduler.Candidates(CostModel(model, budget, activity), "auto")
        cap = scheduler._interval_cap(candidates)
        assert math.isfinite(cap) and any(c.interval > cap for c in candidates.problem().candidates)  # runs left out
        uncapped = scheduler.solve(candidates.problem(), "throughput", "design")
        capped = schedule(model, budget, activity=activity).schedule
        assert capped.stages == tuple(candidate.stage for candidate in uncapped)


def test_forced_pes_are_optimal_among_designs_with_those_pes():
    model = random_chain([24, 50, 12, 40], 7)
    activity = Activity.uniform(model, 0.8)
    cost = CostModel(model, U280, activity)
    for pes in (4, 16):
        scheduled = schedule(model, U280, "auto", "throughput", activity, pes=pes)
        assert {stage.pes for stage in scheduled.schedule.stages} == {pes}
        expected = brute_force(cost, "auto", "throughput", pes)
        assert scheduled.schedule.estimate.bottleneck == pytest.approx(expected[0], rel=1e-9)
        assert searched(scheduled.schedule.estimate) == pytest.approx(expected[1], rel=1e-9)
    with pytest.raises(FpgagenError, match="64 PEs per stage is not possible with the sequential policy"):
        schedule(model, U280, "sequential", pes=64)
    assert {stage.pes for stage in schedule(model, U280, "sequential", pes=32).schedule.stages} == {32}
    # 16-bit weights need 32-bit slots: 32 of them make a 1024-bit beat, two 512-bit ports
    wide = random_chain([24, 50, 12, 40], 7, precision="w16a16")
    (striped,) = schedule(wide, U280, "sequential", pes=32).schedule.stages
    assert striped.channels == 2
    with pytest.raises(
        FpgagenError,
        match="no sequential design with 32 PEs per stage can be built .* at most 512 bits a channel, over at most 1",
    ):
        schedule(wide, board(channels=1), "sequential", pes=32)


def test_policies_shape_the_stages():
    model = random_chain([30, 60, 20, 45, 10], 11)
    dataflow = schedule(model, U280, "dataflow").schedule
    assert all(stage.mode == DATAFLOW and len(stage.layers) == 1 for stage in dataflow.stages)
    sequential = schedule(model, U280, "sequential").schedule
    assert len(sequential.stages) == 1 and sequential.stages[0].mode == SEQUENTIAL
    assert sequential.stages[0].layers == tuple(range(4))
    scheduled = schedule(model, U280, "auto")
    for index, layer in enumerate(scheduled.layers):
        stage = scheduled.schedule.stages[layer.schedule.stage]
        assert index in stage.layers and layer.schedule.mode == stage.mode and layer.schedule.pes == stage.pes


@pytest.mark.parametrize("seed", range(4))
def test_auto_is_never_worse_than_either_pure_style_nor_over_budget(seed):
    rng = np.random.default_rng(100 + seed)
    sizes = [int(n) for n in rng.integers(8, 300, size=int(rng.integers(3, 7)))]
    model = random_chain(sizes, seed, density=float(rng.uniform(0.05, 0.5)))
    activity = Activity.uniform(model, float(rng.uniform(0.2, 1.0)))
    for target in (U280, load_board("pynq-z2"), board(dsp=64, bram36=30, channels=2)):
        pure = []
        for policy in (DATAFLOW, SEQUENTIAL):
            try:
                pure.append(schedule(model, target, policy, activity=activity).schedule.estimate.bottleneck)
            except FpgagenError:
                pass
        auto = schedule(model, target, activity=activity).schedule.estimate if pure else None
        if auto is None:
            with pytest.raises(FpgagenError):
                schedule(model, target, activity=activity)
            continue
        assert auto.bottleneck <= min(pure) * (1 + 1e-12)
        assert auto.resources.fits(board_budget(target))
        assert len([s for s in auto.stages if s.mode == SEQUENTIAL]) <= target.channels
        assert auto.roofline_ratio <= 1.0


def _pruned_stand_in(widths: list[int], seed: int) -> tuple[Model, Activity]:
    """A smaller stand-in for a model of bench/bench_schedule.py: normal weights pruned to 90%."""
    rng = np.random.default_rng(seed)
    layers = tuple(
        Layer(f"fc{i}", f"fc{i}", sparse_weights(rng.standard_normal((a, b))), np.zeros(b), Activation(0.0))
        for i, (a, b) in enumerate(itertools.pairwise(widths))
    )
    model = prune(Model("stand_in", layers, "x", "y", (widths[0],)), 0.9, "magnitude")
    inputs = rng.standard_normal((32, widths[0]))
    quantized = quantize(model, parse_precision("w8a16"), inputs)
    return quantized, Activity.from_calibration(quantized, inputs)


def _graph_challenge_stand_in() -> tuple[Model, Activity]:
    images = draw_images(64, 32, np.random.default_rng(0)).toarray()
    quantized = quantize(network(64, 8), parse_precision("w8a16"), images)
    return quantized, Activity.from_calibration(quantized, images)


@pytest.mark.parametrize(
    "build",
    [
        _graph_challenge_stand_in,
        lambda: _pruned_stand_in([16, 64, 128, 16], 1),  # InTAR's FFN 256-1024-2048-256 / 16
        lambda: _pruned_stand_in([256, 688, 256], 2),  # the gating net 4096-11008-4096 / 16
        lambda: _pruned_stand_in([256, 16, 256, 16, 256], 3),  # widths varying by 16x
    ],
    ids=["graphchallenge", "ffn", "gating", "16x-chain"],
)
def test_auto_beats_the_pure_styles_on_stand_ins_of_the_bench_models(build):
    model, activity = build()
    compared = 0
    for name in ("u280", "pynq-z2"):
        target = load_board(name)
        pure = []
        for policy in (DATAFLOW, SEQUENTIAL):
            try:
                pure.append(schedule(model, target, policy, activity=activity).schedule.estimate.bottleneck)
            except FpgagenError:
                continue
        if not pure:
            continue
        auto = schedule(model, target, activity=activity).schedule.estimate
        assert auto.bottleneck <= min(pure) * (1 + 1e-12), name
        assert auto.resources.fits(board_budget(target)), name
        assert auto.roofline_ratio <= 1.0, name
        compared += 1
    assert compared == 2  # the stand-ins fit both boards


# Refusals -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, policy, message, short",
    [
        ({"dsp": 0}, "auto", r"tiny is short of DSP: the smallest design needs 1 DSP slices, the board has 0 \(1 short\)", ("DSP",)),
        ({"bram36": 2, "uram": 0}, "dataflow", r"tiny is short of BRAM: the smallest dataflow design needs \d+ BRAM36, the board has 2 \(\d+ short\)", ("BRAM",)),
        ({"lut": 500}, "auto", r"tiny is short of LUT: the smallest design needs [\d,]+ LUTs, the board has 500 \([\d,]+ short\)", ("LUT",)),
        ({"ff": 400}, "sequential", r"tiny is short of FF: the smallest sequential design needs [\d,]+ flip-flops, the board has 400 \([\d,]+ short\)", ("FF",)),
        ({"channels": 0}, "sequential", r"tiny has 0 off-chip memory channel\(s\)", ("channels",)),
    ],
)  # fmt: skip
def test_a_board_too_small_is_refused_with_the_resource_that_is_short(changes, policy, message, short):
    model = random_chain([300, 200, 100], 5)
    with pytest.raises(DoesNotFit, match=message) as refused:
        schedule(model, board(**changes), policy)
    assert refused.value.short == short


def test_a_budget_that_fits_each_resource_but_not_all_at_once_says_so():
    model = random_chain([200, 1000], 6, density=0.1)
    cost = CostModel(model, U280, Activity.uniform(model))
    one_lane = cost.dataflow(0, 1).resources
    least_bram = min(cost.dataflow(0, p).resources.bram for p in DATAFLOW_PES)
    assert one_lane.bram > least_bram  # one lane needs the fewest DSPs but not the fewest BRAMs
    tight = board(dsp=1, bram36=least_bram, uram=0)
    with pytest.raises(
        DoesNotFit, match="no dataflow design for model chain6 fits every resource of tiny at once"
    ) as refused:
        schedule(model, tight, "dataflow")
    assert refused.value.short == ()


def test_dataflow_weights_in_ultraram_need_rows_the_load_port_takes_and_a_board_with_ultraram():
    model = random_chain([20, 300, 10], 8, precision="w16a16")
    wide = (
        Stage(DATAFLOW, (0,), 64, "uram", drain_lanes=32),
        Stage(SEQUENTIAL, (1,), 2, "offchip"),
    )  # 64 slots of 20 bits
    with pytest.raises(
        FpgagenError, match=r"stage 0 \(layers fc0\): a row of 64 20-bit slots is wider than the 512-bit"
    ):
        apply_schedule(model, Schedule(wide, 16, "u280", 300.0, "auto", "throughput"))
    bad = (Stage(DATAFLOW, (0,), 4, "flash"), Stage(SEQUENTIAL, (1,), 2, "offchip"))
    with pytest.raises(FpgagenError, match=r"dataflow weights live in a ROM \(bram\) or in UltraRAM .* not 'flash'"):
        apply_schedule(model, Schedule(bad, 16, "u280", 300.0, "auto", "throughput"))
    narrow = (Stage(DATAFLOW, (0,), 16, "uram"), Stage(SEQUENTIAL, (1,), 2, "offchip"))
    scheduled = relabel(apply_schedule(model, Schedule(narrow, 16, "zcu104", 300.0, "auto", "throughput")))
    with pytest.raises(
        FpgagenError, match="stage 0: its weights are to be loaded into UltraRAM, which pynq-z2 has none of"
    ):
        plan_engine(scheduled, load_board("pynq-z2"))
    plan = plan_engine(scheduled, load_board("u280"))
    assert [stage.loaded for stage in plan.stages] == [True, False]
    assert plan.interface.load_port.port == 1 and plan.stages[0].memory("weights").kind == "uram"


def test_the_scheduler_loads_weights_into_ultraram_when_block_ram_is_short():
    """Block RAM for one layer's weights as a ROM but not for two: the other goes to UltraRAM,
    priced as such, with its load beside its latency; without UltraRAM the design does not fit."""
    model = random_chain([2048, 512, 512], 3, density=0.5)
    cost = CostModel(model, U280, Activity.uniform(model, 0.5))
    rom, loaded = cost.dataflow(0, 8, 1), cost.dataflow(0, 8, 1, loaded=True)
    assert cost.loadable(0, 8) and loaded.stage.weight_memory == "uram"
    assert (loaded.resources.uram, loaded.resources.bram) == (
        math.ceil(8 * cost.shape(0, 8).slot.width / 72) * math.ceil(cost.shape(0, 8).rom_beats / 4096),
        rom.resources.bram - price(cost.dataflow_memories(0, 8, 1)[1]).bram,
    )
    load_cycles, _ = cost.load(0, 8)
    assert (loaded.latency, loaded.load) == (rom.latency, load_cycles) and load_cycles == cost.shape(0, 8).rom_beats
    assert loaded.interval == rom.interval
    both = sum(cost.dataflow(i, 8, 1).resources.bram for i in (0, 1))
    short = board(bram36=both - 1, uram=960, shell_uram=0)
    stages = schedule(model, short, DATAFLOW, pes=8).schedule.stages
    assert sorted(stage.weight_memory for stage in stages) == ["bram", "uram"]
    with pytest.raises(DoesNotFit, match="short of BRAM"):
        schedule(model, replace(short, uram=0), DATAFLOW, pes=8)


def test_deep_channels_go_to_ultraram_when_block_ram_is_short(tmp_path):
    """Images slow at different layers want deep channels; with no block RAM left for them they
    go to UltraRAM (a FIFO needs no initial contents), as the plan, the RTL's FIFOs and the HLS
    streams say; without UltraRAM either, the channels stay shallow."""
    images = draw_images(64, 32, np.random.default_rng(5)).toarray()
    model = quantize(network(64, 3), parse_precision("w8a16"), images)
    activity = Activity.from_calibration(model, images)
    roomy = schedule(model, U280, DATAFLOW, pes=4, activity=activity)
    assert roomy.schedule.deep_channels == "bram"
    shallow = CostModel(model, U280, activity).estimate(roomy.schedule.stages, 1024)
    short = board(bram36=shallow.resources.bram, uram=960, shell_uram=0)
    scheduled = schedule(model, short, DATAFLOW, pes=4, activity=activity)
    assert scheduled.schedule.stages == roomy.schedule.stages and scheduled.schedule.deep_channels == "uram"
    plan = plan_engine(relabel(scheduled), short)
    assert all((channel.memory, channel.depth) == ("uram", channel.deep_depth) for channel in plan.channels)
    outdir = tmp_path / "design"
    write_design(relabel(scheduled), short, outdir, images[:2])
    check_design_follows_plan(outdir, relabel(scheduled))  # the RTL's channel FIFOs: the plan's kind, "ultra"
    top = next((outdir / "hls").glob("*_top.cpp")).read_text()
    assert all(f"variable=ch{k} type=fifo impl=uram" in top for k in range(len(plan.channels)))
    assert schedule(model, replace(short, uram=0), DATAFLOW, pes=4, activity=activity).schedule.deep_channels is None


def alternating_chain() -> tuple[Model, Activity]:
    """Three layers of 256 and 32 inputs in runs of three of two kinds: kind A wakes inputs whose
    rows are long at layer 0 and whose outputs have short rows at layer 1, kind B the other way
    round, so the first two stages are slow on different vectors."""
    n, half, few = 256, 128, 32
    rng = np.random.default_rng(1)
    w0, w1 = np.zeros((n, n)), np.zeros((n, n))
    w0[:half, few:] = 0.05 * (rng.random((half, n - few)) < 0.5)  # A: long rows, outputs few..n
    w0[half:, :few] = 0.05 * (rng.random((n - half, few)) < 0.5)  # B: short rows, outputs 0..few
    w1[:few] = 0.05 * (rng.random((few, n)) < 0.8)  # B's outputs: long rows
    w1[few:] = 0.05 * (rng.random((n - few, n)) < 0.02)  # A's outputs: short rows
    w2 = 0.05 * (rng.random((n, n)) < 0.05)
    layers = tuple(
        Layer(f"fc{i}", f"fc{i}", sparse_weights(w), np.zeros(n), Activation(0.0)) for i, w in enumerate((w0, w1, w2))
    )
    images = np.zeros((32, n))
    for v in range(32):
        kind = np.arange(half) if (v // 3) % 2 == 0 else np.arange(half, n)
        images[v, rng.choice(kind, 12, replace=False)] = 1.0
    model = quantize(Model("alternating", layers, "x", "y", (n,)), parse_precision("w8a16"), images)
    return model, Activity.from_calibration(model, images)


def test_the_search_makes_room_for_deep_channels_where_they_pay():
    """A design that fills the block RAM leaves none for deep channels; for throughput the
    search runs again with each stage charged for its deep channel and keeps the faster design.
    Deep channels pay where stages are slow on different vectors (alternating_chain: 490.9 cycles
    a vector with shallow channels, 487.9 with deep ones, at P = 8). Graph Challenge 1024 x 3 at P
    = 8 was the case while each stage's serializers were inside its unit of the tandem line
    (docs/cost-model.md, "Designs"); now its deep channels run as fast as shallow ones, as they
    did in Verilator at P = 16 (295.6 cycles a vector against 296.0)."""
    model, activity = alternating_chain()
    roomy = schedule(model, U280, DATAFLOW, pes=8, activity=activity).schedule
    cost = CostModel(model, U280, activity)
    shallow, deep = cost.estimate(roomy.stages, 1024), cost.estimate(roomy.stages, 1024, deep_channels="bram")
    assert roomy.deep_channels == "bram" and deep.interval < shallow.interval
    tight = board(bram36=shallow.resources.bram + 2, uram=0)
    assert not deep.resources.fits(board_budget(tight))
    made_room = schedule(model, tight, DATAFLOW, pes=8, activity=activity).schedule
    assert made_room.deep_channels == "bram" and made_room.stages != roomy.stages
    assert made_room.estimate.resources.fits(board_budget(tight))
    assert made_room.estimate.interval < shallow.interval
    # The latency objective keeps the sooner of its own search's design (the roomy one, shallow)
    # and the throughput objective's; here their first results are equal, and it takes the faster.
    searched = CostModel(model, tight, activity).estimate(roomy.stages, 1024)
    first = schedule(model, tight, DATAFLOW, pes=8, activity=activity, objective="latency").schedule
    assert first.estimate.latency == searched.latency == made_room.estimate.latency
    assert first.estimate.interval == made_room.estimate.interval < searched.interval


def test_private_pes_are_refused_where_the_engine_cannot_build_them():
    """A private PE takes an entry every cycle: not with stacked banks (the drain takes the MAC's
    slot), and a sequential stage's PEs share its one memory port."""
    model = random_chain([20, 150, 10], 8)  # 150 outputs on one PE: 150 addresses, stacked banks
    stacked = (Stage(DATAFLOW, (0,), 1, "bram", private=True), Stage(DATAFLOW, (1,), 4, "bram"))
    with pytest.raises(FpgagenError, match=r"stage 0 \(layers fc0\): private PEs take an entry every cycle"):
        apply_schedule(model, Schedule(stacked, 16, "u280", 300.0, "auto", "throughput"))
    sequential = (Stage(DATAFLOW, (0,), 4, "bram"), Stage(SEQUENTIAL, (1,), 4, "offchip", private=True))
    with pytest.raises(FpgagenError, match=r"stage 1 \(layers fc1\): a sequential stage's PEs .* none is private"):
        apply_schedule(model, Schedule(sequential, 16, "u280", 300.0, "auto", "throughput"))
    fine = (Stage(DATAFLOW, (0,), 4, "bram", 2, private=True), Stage(DATAFLOW, (1,), 4, "bram"))
    assert apply_schedule(model, Schedule(fine, 16, "u280", 300.0, "auto", "throughput")).layers[0].schedule.private


def test_a_stage_of_128_pes_is_built_but_not_for_the_last_layer_nor_with_four_private_units():
    model = random_chain([20, 300, 10], 9)
    wide = (Stage(DATAFLOW, (0,), 128, "bram", 4), Stage(DATAFLOW, (1,), 8, "bram"))
    assert apply_schedule(model, Schedule(wide, 16, "u280", 300.0, "auto", "throughput")).layers[0].schedule.pes == 128
    private = (Stage(DATAFLOW, (0,), 128, "bram", 2, private=True, drain_lanes=64), Stage(DATAFLOW, (1,), 8, "bram"))
    assert apply_schedule(model, Schedule(private, 16, "u280", 300.0, "auto", "throughput")).layers[0].schedule.private
    four = (Stage(DATAFLOW, (0,), 128, "bram", 4, private=True), Stage(DATAFLOW, (1,), 8, "bram"))
    with pytest.raises(
        FpgagenError, match=r"stage 0 \(layers fc0\): 4 units of 128 private PEs each; a stage has at most 256"
    ):
        apply_schedule(model, Schedule(four, 16, "u280", 300.0, "auto", "throughput"))
    last = (Stage(DATAFLOW, (0,), 8, "bram"), Stage(DATAFLOW, (1,), 128, "bram"))
    with pytest.raises(
        FpgagenError, match=r"stage 1 \(layers fc1\): 128 PEs; the model's last stage drains dense beats"
    ):
        apply_schedule(model, Schedule(last, 16, "u280", 300.0, "auto", "throughput"))
    # a drained word's nonzeros are counted in a cycle: at most 32 values a unit's word (64 took 8 LUT levels)
    long_words = (Stage(DATAFLOW, (0,), 128, "bram", 2, private=True), Stage(DATAFLOW, (1,), 8, "bram"))
    with pytest.raises(FpgagenError, match=r"stage 0 \(layers fc0\): a drain of 128 lanes; .* at most 32 values"):
        apply_schedule(model, Schedule(long_words, 16, "u280", 300.0, "auto", "throughput"))
    cost = CostModel(model, U280, Activity.uniform(model))
    assert drain_lane_choices(cost.shape(0, 64), 1, False) == (32, 16, 8)
    assert cost.drain_lanes(0, 64, 1, False) in (32, 16, 8)  # never all 64 lanes in one unit's words
    # --pes forces every stage, the last too: 128 is not offered
    with pytest.raises(
        FpgagenError, match=r"128 PEs per stage is not possible with the dataflow policy; choose one of"
    ):
        schedule(model, U280, policy=DATAFLOW, pes=128)


def test_a_sequential_stage_whose_port_or_slots_are_too_wide_is_refused():
    stages = (Stage(DATAFLOW, (0,), 4, "bram"), Stage(SEQUENTIAL, (1,), 32, "offchip"))
    wide = random_chain([20, 30, 10], 8, precision="w16a16")  # 32-bit slots: valid, an address bit, the weight
    with pytest.raises(
        FpgagenError,
        match=r"stage 1 \(layers fc1\): 32 PEs of 32-bit off-chip slots over 1 channel\(s\) make a 1024-bit",
    ):
        apply_schedule(wide, Schedule(stages, 16, "u280", 300.0, "auto", "throughput"))
    # striped over two channels, each port is 512 bits; over 4 (no such striping) or more than P, refused
    striped = (stages[0], Stage(SEQUENTIAL, (1,), 32, "offchip", channels=2))
    assert apply_schedule(wide, Schedule(striped, 16, "u280", 300.0, "auto", "throughput")).schedule is not None
    for channels, pes in ((4, 32), (2, 1)):
        refused = (stages[0], Stage(SEQUENTIAL, (1,), pes, "offchip", channels=channels))
        with pytest.raises(FpgagenError, match=rf"striped over {channels} memory channels; .* one of \(1, 2\)"):
            apply_schedule(wide, Schedule(refused, 16, "u280", 300.0, "auto", "throughput"))
    narrow = random_chain([20, 30, 10], 8)  # 8-bit weights: 16-bit slots, a 512-bit port
    assert apply_schedule(narrow, Schedule(stages, 16, "u280", 300.0, "auto", "throughput")).schedule is not None
    with pytest.raises(FpgagenError, match="a dataflow stage reads no memory channel of its own"):
        apply_schedule(narrow, Schedule((Stage(DATAFLOW, (0,), 4, "bram", channels=2), *stages[1:]), 16, "u280",
                                        300.0, "auto", "throughput"))  # fmt: skip


# What limits the design -----------------------------------------------------------------------


def _least_interval(model: Model, on: Board) -> float:
    """The least interval of any design of `model` on `on`, found by the scheduler's own search."""
    cost = CostModel(model, engine_clocked(on), Activity.uniform(model))
    return scheduler.least_interval(scheduler.fit_resources(scheduler.Candidates(cost, "auto").problem())).interval


def test_a_layer_no_faster_stage_exists_for_is_the_limit():
    # one 512-wide layer on the U280, half its LUTs left: no stage of any P and K runs it faster
    model = random_chain([64, 512, 32], seed=5, density=0.5)
    scheduled = schedule(model, U280).schedule
    assert scheduled.limit.kind == "engine"
    name = re.match(r"layer (\w+): the engine builds no stage that runs it in fewer than", scheduled.limit.reason)[1]
    index = [layer.name for layer in model.layers].index(name)
    cost = CostModel(model, engine_clocked(U280), Activity.uniform(model))
    fastest = min(option.interval for option in _run_options(cost, (index,), "auto", None))  # brute force
    assert scheduled.estimate.bottleneck == pytest.approx(fastest)
    assert scheduled.estimate.resources.lut < board_budget(U280).lut / 2
    # forced to 8 PEs a stage, the message says so
    forced = schedule(model, U280, policy=DATAFLOW, pes=8).schedule
    assert (
        forced.limit.kind == "engine" and "no stage for a dataflow design with 8 PEs per stage" in forced.limit.reason
    )


def test_the_resource_named_as_the_limit_buys_a_faster_design_where_the_others_are_to_spare():
    model = random_chain([128, 256, 256, 64], seed=7, density=0.3)
    tight = board(lut=30_000)
    limit = schedule(model, tight).schedule.limit
    assert limit.kind == "lut"
    interval, need = (float(n.replace(",", "")) for n in re.search(
        r"fewer than ([\d,.]+) cycles a vector needs at least ([\d,]+), the budget has 30,000", limit.reason
    ).groups())  # fmt: skip
    assert _least_interval(model, tight) == pytest.approx(interval, abs=0.05)
    # the named amount of LUTs is exactly what a faster design needs
    assert _least_interval(model, replace(tight, lut=int(need))) < interval - 0.05
    assert _least_interval(model, replace(tight, lut=int(need) - 1)) == pytest.approx(interval, abs=0.05)


def test_a_sequential_stage_waiting_for_its_weights_names_the_memory_channels():
    # on the PYNQ-Z2's one 2.1 GB/s channel a sequential stage of more PEs only waits longer
    model = random_chain([40, 300, 200, 10], seed=3)
    scheduled = schedule(model, load_board("pynq-z2"), policy=SEQUENTIAL).schedule
    assert scheduled.limit.kind == "memory"
    assert scheduled.limit.reason.startswith("pynq-z2's memory channels (2.1 GB/s each): layers fc0 to fc2")
    (stage,) = scheduled.stages
    cost = CostModel(model, engine_clocked(load_board("pynq-z2")), Activity.uniform(model))
    assert any(layer.bound == "memory" for layer in cost.alone(stage))


def test_the_input_reader_is_the_limit_when_every_stage_is_faster():
    model = random_chain([4096, 16], seed=6, density=0.05)
    scheduled = schedule(model, U280, activity=Activity.uniform(model, 0.01)).schedule
    assert scheduled.limit.kind == "reader" and "the input reader" in scheduled.limit.reason
    assert scheduled.estimate.bottleneck == scheduled.estimate.reader.interval
    assert max(stage.interval for stage in scheduled.estimate.stages) < scheduled.estimate.reader.interval


def test_a_limit_the_search_could_not_prove_says_so(monkeypatch):
    """When a feasibility program runs out of time, a shorter interval is not ruled out: the
    limit found over the design the search kept says it is unproven."""
    model = random_chain([128, 256, 256, 64], seed=7, density=0.3)
    tight = board(lut=30_000)
    least = _least_interval(model, tight)
    program = scheduler.Problem.program

    def out_of_time_below_the_least(self, objective):  # HiGHS's time-out on every program below it
        if objective is None and self.interval.max() < least * 1.5:
            self.timed_out.append("interval")
            return None
        return program(self, objective)

    monkeypatch.setattr(scheduler.Problem, "priced_chain", lambda self, rounds=0: None)
    monkeypatch.setattr(scheduler.Problem, "program", out_of_time_below_the_least)
    scheduled = schedule(model, tight).schedule
    assert scheduled.unproven == ("interval",)
    assert scheduled.limit.reason.endswith("(unproven: the search ran out of time)")


def test_the_latency_objective_names_no_limit():
    assert schedule(random_chain([40, 64, 10], seed=3), U280, objective="latency").schedule.limit is None


# Boards ---------------------------------------------------------------------------------------


def test_built_in_boards_load_with_their_data_sheet_figures():
    assert builtin_boards() == ["pynq-z2", "u250", "u280", "zcu104"]
    u280 = load_board("u280")
    assert (u280.part, u280.dsp, u280.bram36, u280.uram, u280.channels) == ("xcu280-fsvh2892-2L-e", 9024, 2016, 960, 32)
    assert u280.bytes_per_cycle == pytest.approx(14.375e9 / 300e6)
    assert board_budget(u280) == Resources(dsp=9024, bram=2016 - 195, uram=960, lut=1303680 - 100000, ff=2607360)
    pynq = load_board("pynq-z2")
    assert (pynq.dsp, pynq.bram36, pynq.uram, pynq.lut) == (220, 140, 0, 53200)
    assert board_budget(pynq) == Resources(dsp=220, bram=140, uram=0, lut=53200, ff=106400)  # no shell in the fabric
    for name in builtin_boards():
        assert "DS" in load_board(name).source or "manual" in load_board(name).source


GOOD = """name: mine
part: xc7a35t
dsp: 90
bram36: 50
uram: 0
lut: 20800
ff: 41600
memory: DDR3
channels: 1
channel_gbps: 3.2
clock_mhz: 100
source: Artix-7 data sheet
"""


def test_a_custom_board_file_loads_and_schedules(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(GOOD)
    mine = load_board(path)
    assert (mine.name, mine.dsp, mine.channel_gbps, mine.clock_mhz) == ("mine", 90, 3.2, 100.0)
    scheduled = schedule(random_chain([16, 32, 8], 9), str(path))
    assert scheduled.schedule.board == "mine"


def test_a_shell_is_left_free_by_the_scheduler(tmp_path):
    path = tmp_path / "shelled.yaml"
    path.write_text(GOOD + "shell:\n  dsp: 80\n  bram36: 10\n")
    shelled = load_board(path)
    assert (shelled.shell_dsp, shelled.shell_bram36, shelled.shell_lut) == (80, 10, 0)
    assert board_budget(shelled) == Resources(dsp=10, bram=40, uram=0, lut=20800, ff=41600)
    model = random_chain([16, 32, 8], 9)
    bare = schedule(model, replace(shelled, shell_dsp=0, shell_bram36=0)).schedule.estimate
    assert bare.resources.dsp > 10  # without the shell the fastest design takes more
    estimate = schedule(model, shelled).schedule.estimate
    assert estimate.resources.dsp <= 10 and estimate.budget.dsp == 10
    assert estimate.roofline.compute_bound < bare.roofline.compute_bound  # the roofline counts the budget


@pytest.mark.parametrize(
    "edit, message",
    [
        (("dsp: 90", "dsp: -3"), "field dsp must not be negative, got -3"),
        (("ff: 41600", "ff: 41600\nshell:\n  luts: 3"), "unknown shell field\\(s\\) luts"),
        (("ff: 41600", "ff: 41600\nshell:\n  dsp: 91"), "the shell takes 91 dsp, more than the device's 90"),
        (("ff: 41600", "ff: 41600\nshell: 5"), "shell is a mapping"),
        (("dsp: 90", "dsp: ninety"), "field dsp must be a whole number, got 'ninety'"),
        (("dsp: 90", "dsp: 9.5"), "field dsp must be a whole number, got 9.5"),
        (("dsp: 90", "dsp: true"), "field dsp must be a whole number, got True"),
        (("clock_mhz: 100", "clock_mhz: 0"), "field clock_mhz must be a positive, finite number, got 0"),
        (("channel_gbps: 3.2", "channel_gbps: fast"), "field channel_gbps must be a number, got 'fast'"),
        (("lut: 20800\n", ""), "missing field\\(s\\) lut"),
        (("ff: 41600", "ff: 41600\nluts: 3"), "unknown field\\(s\\) luts"),
        (("name: mine", "name: 7"), "field name must be a non-empty string, got 7"),
        # the part number goes into the vendor's Tcl and config files: nothing but a part number passes
        (("part: xc7a35t", 'part: "xc7z020; exec touch x"'), "field part must be an FPGA part number"),
        (("part: xc7a35t", 'part: "a\\nb"'), "field part must be an FPGA part number"),
    ],
)
def test_bad_board_files_are_refused_naming_the_file_and_the_field(tmp_path, edit, message):
    path = tmp_path / "bad.yaml"
    path.write_text(GOOD.replace(*edit))
    with pytest.raises(FpgagenError, match=f"{path}: {message}"):
        load_board(path)


def test_unreadable_or_unknown_boards_are_refused(tmp_path):
    with pytest.raises(FpgagenError, match="unknown board 'u999'; built-in boards: pynq-z2, u250, u280, zcu104"):
        load_board("u999")
    with pytest.raises(FpgagenError, match="no such board file"):
        load_board(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    with pytest.raises(FpgagenError, match=f"{broken}: not valid YAML"):
        load_board(broken)
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(FpgagenError, match=f"{binary}: not a text file"):
        load_board(binary)
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    with pytest.raises(FpgagenError, match="a board profile is a mapping of fields, got list"):
        load_board(listed)


# The command ----------------------------------------------------------------------------------


def _onnx(tmp_path, sizes, seed):
    model = random_chain(sizes, seed)
    float_model = replace(
        model, layers=tuple(replace(layer, numerics=None) for layer in model.layers), precision=None, input_format=None
    )
    path = tmp_path / "model.onnx"
    write_onnx(float_model, path)
    return path


def test_schedule_command_json_has_the_documented_fields(tmp_path, run_cli):
    path = _onnx(tmp_path, [40, 64, 24, 10], 12)
    result = run_cli("schedule", path, "--board", "zcu104", "--act-density", "0.5", "--json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["board"]["name"] == "zcu104" and document["policy"] == "auto"
    assert document["activity"] == "uniform activation density 0.5"
    assert {"interval", "bottleneck", "latency", "resources", "budget", "throughput"} <= set(document["totals"])
    assert {"batch", "vectors_per_s", "edges_per_s"} <= set(document["totals"]["throughput"])
    assert set(document["roofline"]) >= {"compute_bound", "memory_bound", "ratio"}
    assert len(document["layers"]) == 3
    for layer in document["layers"]:
        assert {"mode", "pes", "units", "stage", "cycles", "bound", "resources"} <= set(layer)
        assert set(layer["cycles"]) == {"compute", "drain", "output"} and layer["bound"] in (
            "compute",
            "memory",
            "input",
        )
        assert set(layer["resources"]) == {"dsp", "bram", "uram", "lut", "ff"}
    for stage in document["stages"]:
        assert {"mode", "layers", "pes", "units", "private", "drain_lanes", "interval", "latency", "resources"} <= set(
            stage
        )
    used, budget = document["totals"]["resources"], document["totals"]["budget"]
    assert all(used[kind] <= budget[kind] for kind in used)
    assert document["totals"]["interval"] == max(
        [document["reader"]["interval"], *(s["interval"] for s in document["stages"])]
    )
    assert document["limit"]["kind"] in ("reader", "engine", "resources", "channels", *used)
    assert document["limit"]["reason"]


def test_schedule_command_prints_a_table_and_refuses_bad_input(tmp_path, run_cli):
    path = _onnx(tmp_path, [40, 64, 24, 10], 13)
    result = run_cli("schedule", path, "--schedule", "sequential")
    assert result.exit_code == 0, result.stderr
    assert "u280" in result.stdout and "seq" in result.stdout and "(engine 0)" in result.stdout
    assert "the worst case: every input nonzero" in result.stdout
    assert (
        "limited by layers fc0 to fc2 (one sequential stage): the engine builds no stage for a sequential design"
        in (" ".join(result.stdout.split()))
    )
    # a dataflow stage's row: its PEs, its issue units (p: private PEs) and its drain lanes
    dataflow = run_cli("schedule", path, "--schedule", "dataflow", "--act-density", "0.5")
    rows = re.findall(r"^\s*(\S+)\s+df/\S+\s+(\d+)\s+(\d+p?)\s+(\d+)\s", dataflow.stdout, re.MULTILINE)
    stages = json.loads(run_cli("schedule", path, "--schedule", "dataflow", "--act-density", "0.5", "--json").stdout)
    expected = [
        (
            str(stage["pes"]),
            f"{stage['units']}{'p' if stage['private'] else ''}",
            str(stage["drain_lanes"] or stage["pes"]),
        )
        for stage in stages["stages"]
    ]
    assert [row[1:] for row in rows] == expected and "K: a stage's issue units" in dataflow.stdout
    refused = run_cli("schedule", path, "--board", "nowhere")
    assert refused.exit_code == 2 and "unknown board 'nowhere'" in refused.stderr
    refused = run_cli("schedule", path, "--act-density", "1.5")
    assert refused.exit_code == 2 and "activation density 1.5 is outside [0, 1]" in refused.stderr
    calib = tmp_path / "calib.npy"
    np.save(calib, np.random.default_rng(0).standard_normal((5, 40)))
    measured = run_cli("schedule", path, "--calib", calib, "--json")
    assert json.loads(measured.stdout)["activity"] == "activation density measured on 5 calibration inputs"


def test_a_board_clock_the_engine_cannot_meet_is_not_used(tmp_path, run_cli):
    path = _onnx(tmp_path, [40, 64, 24, 10], 12)
    fast = tmp_path / "fast.yaml"
    fast.write_text(
        "name: lab-card-3\npart: xcu280-fsvh2892-2L-e\ndsp: 9024\nbram36: 2016\nuram: 960\nlut: 1303680\n"
        "ff: 2607360\nmemory: HBM2\nchannels: 32\nchannel_gbps: 14.375\nclock_mhz: 500\nsource: a hope\n"
    )
    result = run_cli("schedule", path, "--board", fast, "--act-density", "0.5", "--json")
    assert result.exit_code == 0, result.stderr
    assert "lab-card-3 asks for 500 MHz" in result.stderr and "300 MHz" in result.stderr
    document = json.loads(result.stdout)
    assert document["board"]["clock_mhz"] == 300
    throughput = document["totals"]["throughput"]
    assert throughput["steady_vectors_per_s"] == pytest.approx(300e6 / document["totals"]["interval"])
    # compile credits the same clock: in its note, the manifest and the vendor flow's clock target
    compiled = run_cli("compile", path, "--board", fast, "--act-density", "0.5", "-o", tmp_path / "out")
    assert compiled.exit_code == 0, compiled.stderr
    assert "lab-card-3 asks for 500 MHz" in compiled.stderr
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["board"]["clock_mhz"] == 300
    assert "clock=3.333ns" in (tmp_path / "out" / "hls" / "hls_config.cfg").read_text()


def test_the_latency_objective_is_never_later_than_the_throughput_design():
    """Its search minimizes a sum over the stages that is not the first result (it overstates
    overlapping stages and understates chained loads into UltraRAM); on Graph Challenge 4096 x 12
    for the ZCU104 it found 32,021 cycles to the first result where the throughput design takes
    29,103 (under the summed model), so the throughput search's design is taken when sooner."""
    images = draw_images(4096, 20, np.random.default_rng(0)).toarray()
    model = quantize(network(4096, 12), parse_precision("w8a16"), images)
    activity = Activity.from_calibration(model, images)
    board = load_board("zcu104")
    fastest = schedule(model, board, "auto", "latency", activity).schedule.estimate
    throughput = schedule(model, board, "auto", "throughput", activity).schedule.estimate
    assert any(stage.load for stage in fastest.stages)  # a design whose loads overlap
    assert fastest.latency <= throughput.latency
