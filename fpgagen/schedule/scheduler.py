"""The scheduler: InTAR's choice between dataflow and sequential execution, made automatically.

A design is a chain of stages covering the layers in order (docs/engine.md). The candidates are
a dataflow stage for every layer, P in DATAFLOW_PES and weight memory in {BRAM, URAM (if the
board has it)}, and a sequential stage for every run of consecutive layers and P in
SEQUENTIAL_PES. A design is a path of candidates through the layer boundaries, under knapsack
constraints (the board's resources, one memory channel per sequential stage). The choice is
exact for the cost model, by integer programs solved with HiGHS (`scipy.optimize.milp`):

    x_c in {0, 1}                              candidate c is built
    sum_{c starts at 0} x_c = 1;  sum_{c ends at a-1} x_c = sum_{c starts at a} x_c   (a path)
    sum_c r_c x_c <= budget_r - reader_r       for r in DSP, BRAM, URAM, LUT, FF
    sum_{c sequential} x_c <= channels

Latency is linear: sum_c (g_c + P_c [c is not last]) x_c + K + the reader's latency, the lanes a
stage hands on (the end markers its successor reads) charged to the stage that produces them.

The interval is a bottleneck (the largest stage interval), and a stage's interval,
max(f_c + B, d_c), depends on B, the lanes of the stage before it (K for the first). A min-max
objective makes branch and bound crawl (its LP bound is weak and near-equal designs abound), so
the least interval is found by bisection over the finitely many values an interval can take:
"is there a design with every interval <= T?" keeps only the candidates, and the pairs of
neighbours, that meet T, which is a pure feasibility program:

    y_{a,B} = sum_{c ends at a-1, P_c = B} x_c          (the lanes arriving at boundary a)
    x_c <= sum_{B : f_c + B <= T} y_{a,B}               (for c starting at a, if some B fails)

The throughput objective takes the least T, then the least latency among designs within it; the
latency objective the least latency, then the least interval among designs that keep it.

Before any program is built, dynamic programming over (boundary, arriving lanes, sequential
stages used) gives, for every candidate, the least of each resource that any chain through it
needs; candidates that cannot fit are dropped, and a bisection step whose cheapest chain
already exceeds the board is answered without a solver. Both reductions are exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from ..errors import FpgagenError
from ..ir import BRAM, DATAFLOW, SEQUENTIAL, URAM, Model, Schedule
from ..layout import OFFCHIP_MAX_LOCAL
from .apply import DATAFLOW_PES, IN_LANES, SEQUENTIAL_PES, apply_schedule
from .boards import Board, load_board
from .cost_model import RESOURCE_KINDS, Activity, CostModel, StageCost, board_budget

POLICIES = ("auto", DATAFLOW, SEQUENTIAL)
OBJECTIVES = ("throughput", "latency")
DEFAULT_BATCH = 1024
_UNITS = {"dsp": ("DSP", "DSP slices"), "bram": ("BRAM", "BRAM36"), "uram": ("URAM", "URAM blocks"),
          "lut": ("LUT", "LUTs"), "ff": ("FF", "flip-flops")}  # fmt: skip
# An optimum found in the first solve is held in the second with this slack, so that solver
# round-off cannot make the second problem infeasible.
_REL_SLACK, _ABS_SLACK = 1e-9, 1e-6


def schedule(
    model: Model,
    board: Board | str | Path = "u280",
    policy: str = "auto",
    objective: str = "throughput",
    activity: Activity | None = None,
    batch: int = DEFAULT_BATCH,
    pes: int | None = None,
) -> Model:
    """The quantized `model` with the schedule that is optimal for the cost model on `board`."""
    board = board if isinstance(board, Board) else load_board(board)
    if policy not in POLICIES:
        raise FpgagenError(f"schedule policy {policy!r} is not one of {', '.join(POLICIES)}")
    if objective not in OBJECTIVES:
        raise FpgagenError(f"objective {objective!r} is not one of {', '.join(OBJECTIVES)}")
    if batch < 1:
        raise FpgagenError(f"the batch must hold at least one vector, got {batch}")
    if not model.quantized:
        raise FpgagenError(f"model {model.name} is not quantized; quantize it before scheduling")
    cost = CostModel(model, board, activity or Activity.uniform(model))
    candidates = candidate_stages(cost, policy, pes)
    chosen = solve(Problem(cost, candidates), objective, _describe(policy, pes))
    stages = tuple(candidate.stage for candidate in chosen)
    scheduled = Schedule(
        stages=stages,
        in_lanes=cost.reader().lanes,
        board=board.name,
        clock_mhz=board.clock_mhz,
        policy=policy,
        objective=objective,
        estimate=cost.estimate(stages, batch),
    )
    return apply_schedule(model, scheduled)


def candidate_stages(cost: CostModel, policy: str, pes: int | None = None) -> list[StageCost]:
    """Every stage the policy allows (with `pes`, only stages of that many lanes)."""
    count = len(cost.layers)
    allowed = set(DATAFLOW_PES) | set(SEQUENTIAL_PES) if policy == "auto" else None
    if policy == DATAFLOW:
        allowed = set(DATAFLOW_PES)
    elif policy == SEQUENTIAL:
        allowed = set(SEQUENTIAL_PES)
    if pes is not None and pes not in allowed:
        raise FpgagenError(f"{pes} PEs per stage is not possible with the {policy} policy; choose one of {sorted(allowed)}")
    dataflow_pes = [p for p in DATAFLOW_PES if pes in (None, p)] if policy != SEQUENTIAL else []
    sequential_pes = [p for p in SEQUENTIAL_PES if pes in (None, p)] if policy != DATAFLOW else []
    memories = [BRAM, URAM] if cost.board.uram > 0 else [BRAM]

    candidates: list[StageCost] = []
    for index in range(count):
        for p in dataflow_pes:
            options = [cost.dataflow(index, p, memory) for memory in memories]
            # A weight ROM small enough for LUTRAM makes the URAM variant the same stage again.
            candidates += _distinct(options)
    for p in sequential_pes:
        firsts = [0] if policy == SEQUENTIAL else range(count)
        for first in firsts:
            for run in cost.sequential_runs(first, p):
                if policy == SEQUENTIAL and run.last != count - 1:
                    continue
                if -(-cost.layers[run.last].out_features // p) > OFFCHIP_MAX_LOCAL:
                    break  # the off-chip word cannot address that many outputs per lane; longer runs keep the layer
                candidates.append(run)
    return candidates


def _distinct(options: list[StageCost]) -> list[StageCost]:
    kept: list[StageCost] = []
    for option in options:
        if not any(option.resources == other.resources for other in kept):
            kept.append(option)
    return kept


# Every lane count a channel can have: the P of any stage and the reader's K.
LANES = tuple(sorted(set(DATAFLOW_PES) | set(SEQUENTIAL_PES) | set(IN_LANES)))


@dataclass
class _Design:
    chosen: list[int]  # candidate indices in layer order
    interval: float
    latency: float


class Problem:
    """Candidate stages as arrays, and the programs over them (see the module docstring)."""

    def __init__(self, cost: CostModel, candidates: list[StageCost]):
        self.cost = cost
        self.candidates = candidates
        self.layers = len(cost.layers)
        self.reader = cost.reader()
        self.channels = cost.board.channels
        self.room = np.array(board_budget(cost.board).as_tuple(), dtype=np.float64) - self.reader.resources.as_tuple()
        self.first = np.array([c.first for c in candidates], dtype=np.int64)
        self.last = np.array([c.last for c in candidates], dtype=np.int64)
        self.pes = np.array([c.stage.pes for c in candidates], dtype=np.int64)
        self.lane = np.searchsorted(LANES, self.pes)  # column of the lanes each candidate hands on
        self.fixed = np.array([c.fixed_interval for c in candidates], dtype=np.float64)
        self.floor = np.array([c.floor_interval for c in candidates], dtype=np.float64)
        self.sequential = np.array([c.stage.mode == SEQUENTIAL for c in candidates], dtype=np.int64)
        self.resources = np.array([c.resources.as_tuple() for c in candidates], dtype=np.float64).reshape(-1, 5)
        latency = np.array([c.fixed_latency for c in candidates], dtype=np.float64)
        self.latency_weight = latency + self.pes * (self.last < self.layers - 1)
        self.latency_constant = float(self.reader.lanes + self.reader.latency)

    def subset(self, keep: np.ndarray) -> Problem:
        return Problem(self.cost, [self.candidates[c] for c in np.flatnonzero(keep)])

    def evaluate(self, chosen: np.ndarray) -> _Design:
        """Interval and latency of a chain of candidates, straight from the cost model."""
        order = sorted(np.asarray(chosen).tolist(), key=lambda c: self.first[c])
        lanes, interval, latency = self.reader.lanes, float(self.reader.interval), float(self.reader.latency)
        for c in order:
            candidate = self.candidates[c]
            interval = max(interval, candidate.interval(lanes))
            latency += candidate.latency(lanes)
            lanes = candidate.stage.pes
        return _Design(order, interval, latency)

    # Which neighbours meet an interval --------------------------------------------------------

    def arriving(self) -> np.ndarray:
        """(layers, lanes) bool: which lane counts can reach each boundary."""
        arrive = np.zeros((self.layers, len(LANES)), dtype=bool)
        arrive[0, LANES.index(self.reader.lanes)] = True
        inner = self.last + 1 < self.layers
        arrive[self.last[inner] + 1, self.lane[inner]] = True
        return arrive

    def allowed(self, limit: float) -> np.ndarray:
        """(candidates, lanes) bool: the candidate's interval is at most `limit` when fed B lanes."""
        lanes = np.asarray(LANES, dtype=np.float64)
        intervals = np.maximum(self.fixed[:, None] + lanes[None, :], self.floor[:, None])
        return (intervals <= limit * (1 + _REL_SLACK) + _ABS_SLACK) & (self.reader.interval <= limit)

    def interval_values(self) -> np.ndarray:
        """Every value the design's interval can take, sorted."""
        arrive = self.arriving()[self.first]
        lanes = np.asarray(LANES, dtype=np.float64)
        intervals = np.maximum(np.maximum(self.fixed[:, None] + lanes[None, :], self.floor[:, None]), self.reader.interval)
        return np.unique(np.append(intervals[arrive], self.reader.interval))

    # Bounds by dynamic programming -------------------------------------------------------------

    def cover_bounds(self, weights: np.ndarray, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The least sum of each column of `weights` over the chains through each candidate, and
        over all chains, keeping to the board's channels and to `allowed` neighbours (the other
        resources ignored). Exact, by dynamic programming over (boundary, arriving lanes,
        sequential stages used)."""
        n, width = weights.shape
        lanes = len(LANES)
        if allowed is None:
            allowed = np.ones((n, lanes), dtype=bool)
        seats = min(self.channels, self.layers) + 1
        inf = np.inf
        # before[a, B, s]: least cost of the layers < a, handing B lanes to boundary a, s sequential stages
        before = np.full((self.layers + 1, lanes, seats, width), inf)
        before[0, LANES.index(self.reader.lanes), 0] = 0.0
        # after[a, B, s]: least cost of the layers >= a when B lanes arrive at a, at most s sequential stages
        after = np.full((self.layers + 1, lanes, seats, width), inf)
        after[self.layers] = 0.0
        groups = [np.flatnonzero(self.first == a) for a in range(self.layers)]
        blocked = np.where(allowed, 0.0, inf)  # (n, lanes)
        for a in range(self.layers):
            for uses in (0, 1):
                chosen = groups[a][self.sequential[groups[a]] == uses]
                if len(chosen) == 0 or seats <= uses:
                    continue
                # cheapest arriving lanes each candidate accepts, per count of sequential stages
                entry = (before[a][None, :, : seats - uses] + blocked[chosen][:, :, None, None]).min(axis=1)
                values = entry + weights[chosen][:, None, :]
                target = (self.last[chosen][:, None] + 1, self.lane[chosen][:, None], np.arange(uses, seats)[None, :])
                np.minimum.at(before, target, values)
        for a in reversed(range(self.layers)):
            for uses in (0, 1):
                chosen = groups[a][self.sequential[groups[a]] == uses]
                if len(chosen) == 0 or seats <= uses:
                    continue
                tail = after[self.last[chosen] + 1, self.lane[chosen], : seats - uses] + weights[chosen][:, None, :]
                values = tail[:, None, :, :] + blocked[chosen][:, :, None, None]  # (m, lanes, s, width)
                after[a, :, uses:] = np.minimum(after[a, :, uses:], values.min(axis=0))
        after = np.minimum.accumulate(after, axis=2)
        through = np.full((n, width), inf)
        for start in range(0, n, _BLOCK):
            block = slice(start, min(n, start + _BLOCK))
            first, last, lane = self.first[block], self.last[block], self.lane[block]
            seq = self.sequential[block]
            head = (before[first] + blocked[block][:, :, None, None]).min(axis=1)  # (m, seats, width)
            for s in range(seats):
                rest = seats - 1 - s - seq
                ok = rest >= 0
                value = head[ok, s] + weights[block][ok] + after[last[ok] + 1, lane[ok], rest[ok]]
                part = through[block]
                part[ok] = np.minimum(part[ok], value)
                through[block] = part
        least = before[self.layers].min(axis=(0, 1))
        return through, least

    # Integer programs ---------------------------------------------------------------------------

    def program(
        self, objective: np.ndarray | None, allowed: np.ndarray | None, holds: list[tuple[np.ndarray, float]]
    ) -> np.ndarray | None:
        """The candidates of an optimal (or, without objective, any) design; None if there is none.

        `allowed` limits which arriving lanes each candidate accepts (all when None); each hold
        (weights, bound) adds sum_c weights_c x_c <= bound.
        """
        n = len(self.candidates)
        if n == 0:
            return None
        builder = _Rows()
        for a in range(self.layers):  # a path through the layer boundaries
            starts, ends = np.flatnonzero(self.first == a), np.flatnonzero(self.last == a - 1)
            need = 1.0 if a == 0 else 0.0
            builder.add(np.concatenate([starts, ends]), np.r_[np.ones(len(starts)), -np.ones(len(ends))], need, need)
        every = np.arange(n)
        for k in range(len(RESOURCE_KINDS)):
            builder.add(every, self.resources[:, k], -np.inf, self.room[k])
        builder.add(every, self.sequential, -np.inf, self.channels)
        for weights, bound in holds:
            builder.add(every, weights, -np.inf, bound)
        columns = n
        if allowed is not None:
            columns = self._transitions(builder, allowed)
        cost = np.zeros(columns)
        if objective is not None:
            cost[:n] = objective
        integrality = np.zeros(columns)
        integrality[:n] = 1
        result = milp(
            cost,
            constraints=[builder.constraint(columns)],
            integrality=integrality,
            bounds=Bounds(0, 1),
            options={"mip_rel_gap": 0.0},
        )
        if result.status == 2:  # infeasible
            return None
        if result.x is None:
            raise FpgagenError(f"the scheduler's solver stopped without a design: {result.message}")
        return np.flatnonzero(result.x[:n] > 0.5)

    def _transitions(self, builder: _Rows, allowed: np.ndarray) -> int:
        """Rows that keep each candidate to the arriving lanes it accepts; returns the column count."""
        n = len(self.candidates)
        arrive = self.arriving()
        column = {}  # (boundary, lanes) -> y column
        for a in range(1, self.layers):
            for b in np.flatnonzero(arrive[a]):
                ends = np.flatnonzero((self.last == a - 1) & (self.lane == b))
                column[a, b] = n + len(column)
                builder.add(np.append(ends, column[a, b]), np.append(-np.ones(len(ends)), 1.0), 0.0, 0.0)
        for c in np.flatnonzero(self.first > 0):
            a = self.first[c]
            lanes = np.flatnonzero(arrive[a])
            if allowed[c, lanes].all():
                continue
            accepted = [column[a, b] for b in lanes if allowed[c, b]]
            builder.add(np.array([c, *accepted]), np.r_[1.0, -np.ones(len(accepted))], -np.inf, 0.0)
        return n + len(column)


class _Rows:
    """A sparse constraint matrix built row by row."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.lower: list[float] = []
        self.upper: list[float] = []

    def add(self, columns: np.ndarray, values: np.ndarray, low: float, high: float) -> None:
        self.rows.append(np.full(len(columns), len(self.lower)))
        self.cols.append(np.asarray(columns, dtype=np.int64))
        self.vals.append(np.asarray(values, dtype=np.float64))
        self.lower.append(low)
        self.upper.append(high)

    def constraint(self, columns: int) -> LinearConstraint:
        matrix = sp.csr_array(
            (np.concatenate(self.vals), (np.concatenate(self.rows), np.concatenate(self.cols))),
            shape=(len(self.lower), columns),
        )
        return LinearConstraint(matrix, np.array(self.lower), np.array(self.upper))


_BLOCK = 2048  # candidates per block of the through-bound computation, to bound memory


def solve(problem: Problem, objective: str, description: str) -> list[StageCost]:
    """The optimal stages in layer order; refuses a board no design fits."""
    if objective == "throughput":
        found = least_interval(problem, [])  # each of its steps drops what does not fit
        if found is None:
            raise FpgagenError(shortfall(problem, description))
        narrowed, limit = found[0], found[1].interval
        design = least_latency(narrowed, limit)
    else:
        narrowed = _latency_candidates(fit_resources(problem))
        best = least_latency(narrowed, None)
        if best is None:
            raise FpgagenError(shortfall(problem, description))
        hold = (narrowed.latency_weight, _loosen(best.latency) - narrowed.latency_constant)
        narrowed, design = least_interval(narrowed, [hold])
    return [narrowed.candidates[c] for c in design.chosen]


def fit_resources(problem: Problem) -> Problem:
    """Drop the candidates that no chain within the board's resources can contain."""
    if not problem.candidates:
        return problem
    through, _ = problem.cover_bounds(problem.resources)
    return problem.subset((through <= problem.room).all(axis=1))


def least_interval(problem: Problem, holds: list[tuple[np.ndarray, float]]) -> tuple[Problem, _Design] | None:
    """A design of the least interval among those meeting `holds` (weights over `problem`'s
    candidates, and bounds); None if there is no design at all.

    The search runs over the values an interval can take (the module docstring says why):
    upwards in doubling steps from a lower bound until a design is found, then by bisection.
    Small limits leave few candidates, so the steps are cheap where most of them fall. Each
    design found bounds the optimum, so the candidates that cannot meet it leave the problem:
    the design comes with the problem it indexes.
    """
    values = problem.interval_values()
    low = int(np.searchsorted(values, _interval_floor(problem) * (1 - _REL_SLACK) - _ABS_SLACK))
    high = len(values) - 1
    best = None
    step = 1
    while low <= high:
        probe = min(high, low + step - 1) if best is None else (low + high) // 2
        design = _within(problem, values[probe], holds)
        if design is None:
            low, step = probe + 1, step * 2
            continue
        keep = problem.allowed(design.interval).any(axis=1)
        problem, holds = problem.subset(keep), [(weights[keep], bound) for weights, bound in holds]
        design.chosen = [int(np.searchsorted(np.flatnonzero(keep), c)) for c in design.chosen]
        best = (problem, design)
        high = int(np.searchsorted(values, design.interval * (1 - _REL_SLACK) - _ABS_SLACK)) - 1
    return best


def _interval_floor(problem: Problem) -> float:
    """No design's interval is below this: every layer needs a stage, and a run through a layer
    takes at least as long as that layer alone on the same lanes."""
    single = problem.last == problem.first
    fewest = np.full(problem.layers, np.inf)
    lanes = np.where(problem.first[single] == 0, problem.reader.lanes, min(LANES))
    own = np.maximum(problem.fixed[single] + lanes, problem.floor[single])
    np.minimum.at(fewest, problem.first[single], own)
    return float(max(problem.reader.interval, fewest.max(initial=0.0))) if np.isfinite(fewest).all() else 0.0


def _within(problem: Problem, limit: float, holds: list[tuple[np.ndarray, float]]) -> _Design | None:
    """Some design whose every interval is at most `limit`, or None."""
    allowed = problem.allowed(limit)
    keep = allowed.any(axis=1)
    sub, allowed = problem.subset(keep), allowed[keep]
    weights = np.column_stack([sub.resources, *(w[keep] for w, _ in holds)])
    bounds = np.r_[sub.room, [bound for _, bound in holds]]
    through, least = sub.cover_bounds(weights, allowed)
    if not (least <= bounds).all():
        return None  # even the cheapest chain exceeds the board
    fits = (through <= bounds).all(axis=1)
    sub, allowed = sub.subset(fits), allowed[fits]
    chosen = sub.program(None, allowed, [(w[keep][fits], bound) for w, bound in holds])
    if chosen is None:
        return None
    design = sub.evaluate(chosen)
    design.chosen = [int(np.flatnonzero(keep)[np.flatnonzero(fits)[c]]) for c in design.chosen]
    return design


def least_latency(problem: Problem, limit: float | None) -> _Design | None:
    """A design of the least latency among those whose intervals are at most `limit` (if any)."""
    if limit is not None:
        allowed = problem.allowed(limit)
        keep = allowed.any(axis=1)
        sub = problem.subset(keep)
        chosen = sub.program(sub.latency_weight, allowed[keep], [])
        chosen = None if chosen is None else np.flatnonzero(keep)[chosen]
    else:
        chosen = problem.program(problem.latency_weight, None, [])
    return None if chosen is None else problem.evaluate(chosen)


def _latency_candidates(problem: Problem) -> Problem:
    """Drop candidates in no design of least latency; the optimum is unchanged.

    An upper bound U on the least latency comes from the same program restricted to stages of
    one layer (its designs are designs of the full program); a candidate every chain through
    which takes longer than U (`cover_bounds`, resources ignored) is in no optimum. Long
    sequential runs, seldom competitive, leave the program here.
    """
    short = problem.last == problem.first
    if not problem.candidates or short.all():
        return problem
    restricted = least_latency(problem.subset(short), None)
    if restricted is None:
        return problem
    through, _ = problem.cover_bounds(problem.latency_weight[:, None])
    return problem.subset(through[:, 0] + problem.latency_constant <= _loosen(restricted.latency))


def _loosen(value: float) -> float:
    """An optimum held in a later program, with room for the solver's round-off."""
    return value * (1 + _REL_SLACK) + _ABS_SLACK


def _describe(policy: str, pes: int | None) -> str:
    name = {"auto": "design", DATAFLOW: "dataflow design", SEQUENTIAL: "sequential design"}[policy]
    return name if pes is None else f"{name} with {pes} PEs per stage"


def shortfall(problem: Problem, description: str) -> str:
    """Why no candidate chain fits the board: the resources even the smallest design exceeds."""
    board = problem.cost.board
    model = problem.cost.model.name
    if not problem.candidates:
        return f"no {description} can be built for model {model}"
    _, least = problem.cover_bounds(problem.resources)
    if np.isinf(least).any():
        return (
            f"{board.name} has {board.channels} off-chip memory channel(s), one per sequential stage; "
            f"no {description} for model {model} fits in that many"
        )
    needs = least + problem.reader.resources.as_tuple()
    budget = board_budget(board).as_tuple()
    shorts = [
        f"{board.name} is short of {_UNITS[kind][0]}: the smallest {description} needs {need:,.0f} "
        f"{_UNITS[kind][1]}, the board has {have:,} ({need - have:,.0f} short)"
        for kind, need, have in zip(RESOURCE_KINDS, needs, budget)
        if need > have
    ]
    if shorts:
        return "; ".join(shorts)
    each = ", ".join(f"{need:,.0f} {_UNITS[kind][1]}" for kind, need in zip(RESOURCE_KINDS, needs))
    have = ", ".join(f"{count:,} {_UNITS[kind][1]}" for kind, count in zip(RESOURCE_KINDS, budget))
    return (
        f"no {description} for model {model} fits every resource of {board.name} at once, though each "
        f"resource alone would (the least each needs: {each}; the board has {have})"
    )
