"""The scheduler: InTAR's choice between dataflow and sequential execution, made automatically.

A design is a chain of stages covering the layers in order (docs/engine.md). The candidates are
a dataflow stage for every layer, P in DATAFLOW_PES and K issue units in UNITS (K <= P), its PEs
shared by the units or each unit's own (private: where CostModel.private_fits), and a
sequential stage for every run of consecutive layers and P in SEQUENTIAL_PES. A stage's cycles do not depend on its neighbours, so
each candidate c has a fixed interval t_c, latency g_c and resources r_c, and a design is a path
of candidates through the layer boundaries under knapsack constraints (the board's resources,
its memory channels, one or more per sequential stage). The choice is exact for the cost model; its integer
program, solved with HiGHS (`scipy.optimize.milp`), is

    x_c in {0, 1}                              candidate c is built
    sum_{c starts at 0} x_c = 1;  sum_{c ends at a-1} x_c = sum_{c starts at a} x_c   (a path)
    sum_c r_c x_c <= budget_r - reader_r       for r in DSP, BRAM, URAM, LUT, FF
    sum_{c sequential} channels_c x_c <= channels

The latency, sum_c g_c x_c plus the reader's, is linear (g_c: estimates.searched, a stage's
latency with its load phase: estimates.searched_latency, a proxy for the first result, which
follows the vector through the stages and is not a sum).
The interval, max(reader, max_c t_c x_c), is a bottleneck: a min-max objective makes branch and bound crawl (its LP bound is weak and
near-equal designs abound), so the least interval is found by bisection over the values t_c:
"is there a design with every interval <= T?" is the program above over the candidates with
t_c <= T, without objective. The throughput objective takes the least T, then the least latency
among the designs within it. The latency objective takes the least latency (its ties are not
broken: a least-interval tie-break would be another bisection), or the throughput search's design
where that reaches its first result sooner (`_sooner`).

Pricing the sequential runs (quadratic in the layers) is most of the work on a deep model, so for
the throughput objective under the auto policy the dataflow stages alone are searched first: their
least interval bounds the design's, and no run above it can be in a design of the least interval
(a run's interval only grows with its layers, so its pricing stops there). Exact as well.

Before any program is built, dynamic programming over (boundary, memory channels used) gives,
for every candidate, the least of each resource that any chain through it needs; candidates that
cannot fit are dropped, and a bisection step whose cheapest chain already exceeds the board is
answered without a solver. Both reductions are exact.

The least latency is a resource-constrained shortest path. Its LP bound is close, but when a
resource binds on many near-equal designs (BRAM on Graph Challenge networks) branch and bound
takes minutes to close the last fraction of a percent. So `least_latency` prices the resources
with the LP's duals, which bounds the latency of every design through each candidate and keeps
only the candidates near the optimum; among those, a dynamic program that keeps the scarcest
resource exactly (and the channels) finds a design of least latency whenever its chain fits the
rest of the board, and the integer program runs only when it does not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from ..engine.clock import engine_clocked
from ..engine.geometry import MAX_OUT_LANES, MAX_PORT_BITS, STRIPES, UNITS
from ..errors import DoesNotFit, FpgagenError
from ..ir import BRAM, DATAFLOW, SEQUENTIAL, URAM, Limit, Model, Schedule, Stage
from .activity import Activity
from .apply import DATAFLOW_PES, FORCED_PES, SEQUENTIAL_PES, apply_schedule
from .boards import Board, load_board
from .cost_model import CostModel
from .cycles import MEMORY_BOUND
from .estimates import DesignEstimate, StageCost, searched
from .resources import RESOURCE_KINDS, Resources, board_budget

POLICIES = ("auto", DATAFLOW, SEQUENTIAL)
OBJECTIVES = ("throughput", "latency")
DEFAULT_BATCH = 1024
# what `pes` may force on every stage, by policy (the model's last stage takes at most MAX_OUT_LANES)
_PES = {"auto": {*FORCED_PES}, DATAFLOW: {*DATAFLOW_PES} & {*FORCED_PES}, SEQUENTIAL: {*SEQUENTIAL_PES}}
_UNITS = {  # resource: (its name in messages, its unit)
    "dsp": ("DSP", "DSP slices"),
    "bram": ("BRAM", "BRAM36"),
    "uram": ("URAM", "URAM blocks"),
    "lut": ("LUT", "LUTs"),
    "ff": ("FF", "flip-flops"),
}
# Slack on comparisons of cycle counts (sums of floats), so that round-off never excludes the
# design that sets a bound.
_REL_SLACK, _ABS_SLACK = 1e-9, 1e-6
# The first margin of the latency search above its Lagrangian bound, relative; it grows fourfold
# per step (Graph Challenge networks have their optimum 0.2 to 0.4% above the bound).
_MARGIN = 1e-3
NOTHING = Resources()  # what a Problem keeps free besides the reader, unless told
_DP_CELLS = 10_000_000  # the largest table `Problem.least_chain` builds: 80 MB of costs, 40 MB of links
# How long one integer program may run. Its bound closes slowly when two resources bind on many
# near-equal designs (Graph Challenge 4096 x 120, block RAM and UltraRAM, latency ranking the
# loads of weights into UltraRAM): past this, the program's best design is taken, and the schedule
# says that its latency is not proven least.
PROGRAM_SECONDS = 15.0
# How far above the least latency a design of the least interval may be: the integer program's
# relative gap. Exact (0) took Graph Challenge 1024 x 120 past PROGRAM_SECONDS once dataflow stages
# could take any multiple of 8 PEs (many near-equal designs); 1e-3 closes in a second or two and
# gave a latency 0.06% above the one the exact program had when its time ran out.
LATENCY_GAP = 1e-3
# Intervals closer than this, relative, are equal: a tandem line's interval is a difference of long
# sums, and two lines that run alike can round a few ulps apart.
INTERVAL_TOLERANCE = 1e-9
PRICE_ROUNDS = 30  # re-pricings of the resources before a feasibility question goes to the program


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
    board = engine_clocked(board if isinstance(board, Board) else load_board(board))
    if policy not in POLICIES:
        raise FpgagenError(f"schedule policy {policy!r} is not one of {', '.join(POLICIES)}")
    if objective not in OBJECTIVES:
        raise FpgagenError(f"objective {objective!r} is not one of {', '.join(OBJECTIVES)}")
    if batch < 1:
        raise FpgagenError(f"the batch must hold at least one vector, got {batch}")
    if not model.quantized:
        raise FpgagenError(f"model {model.name} is not quantized; quantize it before scheduling")
    cost = CostModel(model, board, activity or Activity.uniform(model))
    candidates = Candidates(cost, policy, pes)
    problem = candidates.problem(_interval_cap(candidates) if objective == "throughput" else math.inf)
    description = _describe(policy, pes)
    solved = solve(problem, objective, description)
    stages = tuple(candidate.stage for candidate in solved)
    found = None
    if objective == "throughput":
        found = limit(problem, max([problem.reader.interval, *(c.interval for c in solved)]), policy, pes)
        if "interval" in problem.timed_out:  # a shorter interval was not ruled out
            found = replace(found, reason=f"{found.reason} (unproven: the search ran out of time)")
    stages, estimate = deepening(problem, stages, batch, objective, description, candidates)
    if objective == "latency":
        stages, estimate = _sooner(problem, stages, estimate, batch, description, candidates)
    scheduled = Schedule(
        stages=stages,
        in_lanes=cost.reader().lanes,
        board=board.name,
        clock_mhz=board.clock_mhz,
        policy=policy,
        objective=objective,
        estimate=estimate,
        deep_channels=estimate.deep_channels,
        unproven=tuple(sorted(set(problem.timed_out))),
        limit=found,
    )
    return apply_schedule(model, scheduled)


def _sooner(
    problem: Problem,
    stages: tuple[Stage, ...],
    estimate: DesignEstimate,
    batch: int,
    description: str,
    candidates: Candidates,
) -> tuple[tuple[Stage, ...], DesignEstimate]:
    """The latency search's design, or the throughput search's where that reaches its first result
    sooner. The latency search minimizes a sum over the stages (searched_latency), which
    overstates designs whose stages overlap and understates chained loads into UltraRAM, so
    another design can be sooner (Graph
    Challenge 4096 x 12 on the ZCU104: 32,021 cycles against the throughput design's 29,103,
    under the summed model). This costs a second
    search: its design as it found it and as the throughput objective takes it (which may search
    again for room for deep channels, and find another)."""
    found = tuple(candidate.stage for candidate in solve(problem, "throughput", description))
    taken = deepening(problem, found, batch, "throughput", description, candidates)
    designs = [(stages, estimate)]
    if taken[0] != found:  # its search for deep channels chose another design; else the two agree
        designs.append(deepening(problem, found, batch, "latency", description))
    designs.append(taken)
    return min(designs, key=lambda design: (design[1].latency, design[1].interval))


def deepening(
    problem: Problem,
    stages: tuple[Stage, ...],
    batch: int,
    objective: str,
    description: str,
    candidates: Candidates | None = None,
) -> tuple[tuple[Stage, ...], DesignEstimate]:
    """The design's stages and its estimate, whose `deep_channels` says whether its channels are
    to be deep, and in which memory: block
    RAM when the budget has it left, else UltraRAM (which a FIFO may be: it needs no initial
    contents) on a board that has it; None (shallow channels) when neither fits, or when the
    interval is no shorter with them and the design is a single stage or scheduled for a density
    (one expected vector). A design of two stages or more on measured vectors takes deep channels
    that fit even where the cost model's line runs as fast through shallow ones: in Verilator
    they never ran slower, and at P = 40, K = 2 faster than the line says shallow ones run
    (docs/cost-model.md, "Designs"), and their FIFOs leave LUT RAM for memory the design left
    idle.

    The search prices stages, not channels, so its design may fill the board to the last block
    (Graph Challenge 4096 x 120 on the U280 left 2 URAM too few for 242). For throughput, the
    search then runs again with every candidate charged for its deep output channel, in the
    memory the first design overran least, and the design of the shorter interval is kept. So that
    search needs no candidate slower than the first design: where `problem` lacks some of those
    (its `limit`), `candidates` prices them."""
    cost = problem.cost
    shallow = cost.estimate(stages, batch)
    even = len(stages) > 1 and cost.activity.samples is not None  # deep channels at an equal interval
    overruns = []
    for memory in (BRAM, URAM) if cost.uram else (BRAM,):
        deep = cost.estimate(stages, batch, deep_channels=memory)
        shorter = _shorter(deep.interval, shallow.interval)
        if deep.resources.fits(shallow.budget) and (shorter or even):
            return stages, deep
        if shorter:
            overruns.append((_overrun(deep.resources, shallow.budget), memory))
    if objective != "throughput" or not overruns:  # a new search pays only where the line is shorter
        return stages, shallow
    memory = min(overruns)[1]
    pool = problem if candidates is None or shallow.interval <= problem.limit else candidates.problem(shallow.interval)
    charged = Problem(
        cost,
        [replace(c, resources=c.resources + cost.output_deepening(c.stage, memory)) for c in pool.candidates],
        reserved=cost.reader_deepening(cost.reader().lanes, memory),
    )
    try:
        restaged = tuple(candidate.stage for candidate in solve(charged, objective, description))
    except DoesNotFit:
        return stages, shallow
    deep = cost.estimate(restaged, batch, deep_channels=memory)
    if not deep.resources.fits(shallow.budget) or not _shorter(deep.interval, shallow.interval):
        return stages, shallow
    problem.timed_out.extend(charged.timed_out)
    return restaged, deep


def _shorter(interval: float, than: float) -> bool:
    """Whether `interval` is shorter than `than` by more than INTERVAL_TOLERANCE."""
    return interval < than * (1 - INTERVAL_TOLERANCE)


def _overrun(used: Resources, budget: Resources) -> float:
    """How far `used` exceeds `budget`: its largest excess over a resource, relative to the budget."""
    return max((u - b) / max(b, 1) for u, b in zip(used.as_tuple(), budget.as_tuple()))


class Candidates:
    """The stages `policy` allows (with `pes`, only stages of that many lanes): a dataflow stage
    for every layer, P and K, and a sequential stage for every run of layers and P."""

    def __init__(self, cost: CostModel, policy: str, pes: int | None = None):
        allowed = _PES[policy]
        if pes is not None and pes not in allowed:
            raise FpgagenError(
                f"{pes} PEs per stage is not possible with the {policy} policy; choose one of {sorted(allowed)}"
            )
        self.cost = cost
        self.policy = policy
        self.sequential_pes = [p for p in SEQUENTIAL_PES if pes in (None, p)] if policy != DATAFLOW else []
        dataflow_pes = [p for p in DATAFLOW_PES if pes in (None, p)] if policy != SEQUENTIAL else []
        self.dataflow = [
            cost.dataflow(index, p, units, loaded, private, choose_lanes=True)
            for index in range(len(cost.layers))
            for p in dataflow_pes
            if p <= MAX_OUT_LANES or not cost.is_last(index)  # the last stage drains dense beats of P values
            for units in UNITS
            if units <= p and cost.drainable(index, p, units)
            for loaded in (False, True)
            if not loaded or cost.loadable(index, p)
            for private in (False, True)
            if not private or cost.private_fits(index, p, units)
        ]

    def problem(self, limit: float = math.inf) -> Problem:
        """Every dataflow candidate, and the sequential runs of an interval at most `limit`."""
        last = len(self.cost.layers) - 1
        runs = [
            run
            for p in self.sequential_pes
            for first in ([0] if self.policy == SEQUENTIAL else range(last + 1))
            for run in self.cost.sequential_runs(first, p, limit=_loosen(limit))  # those the engine takes
            if self.policy != SEQUENTIAL or run.last == last
        ]
        return Problem(self.cost, self.dataflow + runs, limit=limit)


def _interval_cap(candidates: Candidates) -> float:
    """An interval the design of the least interval does not exceed, known before any sequential
    run is priced: the least interval of the dataflow stages alone, when the policy also has
    sequential ones and such a design fits the board; else none (infinity)."""
    if candidates.policy != "auto" or not candidates.dataflow:
        return math.inf
    found = least_interval(fit_resources(Problem(candidates.cost, candidates.dataflow)))
    return math.inf if found is None else found.interval


@dataclass
class _Design:
    chosen: list[int]  # candidate indices in layer order
    interval: float
    latency: float


class Problem:
    """Candidate stages as arrays, and the programs over them (see the module docstring)."""

    def __init__(
        self,
        cost: CostModel,
        candidates: list[StageCost],
        timed_out: list[str] | None = None,
        reserved: Resources = NOTHING,
        limit: float = math.inf,
    ):
        self.cost = cost
        self.candidates = candidates
        self.limit = limit  # the sequential runs of a longer interval were not priced
        # what the programs stopped by PROGRAM_SECONDS left unproven; shared with every subset
        self.timed_out = [] if timed_out is None else timed_out
        self.reserved = reserved  # kept free besides the reader (deep channels' share of it)
        self.layers = len(cost.layers)
        self.reader = cost.reader()
        self.channels = cost.board.channels
        taken = self.reader.resources + reserved
        self.room = np.array(board_budget(cost.board).as_tuple(), dtype=np.float64) - taken.as_tuple()
        self.first = np.array([c.first for c in candidates], dtype=np.int64)
        self.last = np.array([c.last for c in candidates], dtype=np.int64)
        self.interval = np.array([c.interval for c in candidates], dtype=np.float64)
        self.latency = np.array([searched(c) for c in candidates], dtype=np.float64)
        # memory channels each candidate takes: a sequential stage's, striped over one or more
        self.ports = np.array(
            [c.stage.channels if c.stage.mode == SEQUENTIAL else 0 for c in candidates], dtype=np.int64
        )
        self.resources = np.array([c.resources.as_tuple() for c in candidates], dtype=np.float64).reshape(-1, 5)

    def subset(self, keep: np.ndarray) -> Problem:
        kept = [self.candidates[c] for c in np.flatnonzero(keep)]
        return Problem(self.cost, kept, self.timed_out, self.reserved, self.limit)

    def evaluate(self, chosen: np.ndarray) -> _Design:
        """Interval and latency of a chain of candidates."""
        order = sorted(np.asarray(chosen).tolist(), key=lambda c: self.first[c])
        interval = max([float(self.reader.interval), *self.interval[order]])
        latency = self.reader.latency + float(self.latency[order].sum())
        return _Design(order, interval, latency)

    def runs(self) -> tuple[np.ndarray, np.ndarray]:
        """Every (layer, candidate) pair of a candidate and a layer it runs."""
        length = self.last - self.first + 1
        offset = np.arange(length.sum()) - np.repeat(np.cumsum(length) - length, length)
        return np.repeat(self.first, length) + offset, np.repeat(np.arange(len(self.candidates)), length)

    def fastest(self) -> np.ndarray:
        """Per layer, the least interval of the candidates that run it (infinity: none does)."""
        layers, candidates = self.runs()
        fewest = np.full(self.layers, np.inf)
        np.minimum.at(fewest, layers, self.interval[candidates])
        return fewest

    def meets(self, limit: float) -> np.ndarray:
        """Which candidates keep a design's interval within `limit`."""
        within = self.interval <= limit * (1 + _REL_SLACK) + _ABS_SLACK
        return within & (self.reader.interval <= limit)

    def dominated(self, latency: bool = False) -> np.ndarray:
        """Which candidates another one of the same layers and kind can replace in any design,
        using no more of any resource (and, with `latency`, taking no longer); the first of equals
        stays. Where the interval no longer matters (every candidate already meets it), dropping
        them keeps every answer, and spares the integer program the many near-equal options of
        alike layers (Graph Challenge's)."""
        dropped = np.zeros(len(self.candidates), dtype=bool)
        if not self.candidates:
            return dropped
        costs = np.column_stack([self.resources, self.ports, *([self.latency] if latency else [])])
        keys = np.stack([self.first, self.last, self.ports > 0], axis=1)
        group = np.unique(keys, axis=0, return_inverse=True)[1].reshape(-1)
        for members in np.split(np.argsort(group, kind="stable"), np.flatnonzero(np.diff(np.sort(group))) + 1):
            used = costs[members]
            no_more = (used[:, None, :] <= used[None, :, :]).all(axis=2)  # [d, c]: d uses no more than c
            less = (used[:, None, :] < used[None, :, :]).any(axis=2)
            earlier = members[:, None] < members[None, :]
            dropped[members] = (no_more & (less | earlier)).any(axis=0)
        return dropped

    def fits(self, chain: np.ndarray) -> bool:
        return bool((self.resources[chain].sum(axis=0) <= self.room).all() and self.ports[chain].sum() <= self.channels)

    def cheapest_chain(self, cost: np.ndarray) -> np.ndarray | None:
        """The chain of candidates of least total `cost` (channels ignored), by dynamic programming
        over the layer boundaries, a boundary at a time (every chain into it is known by then);
        None if no chain covers the layers."""
        best = np.full(self.layers + 1, np.inf)
        best[0] = 0.0
        via = np.full(self.layers + 1, -1)
        order = np.argsort(self.first, kind="stable")
        starts = np.searchsorted(self.first[order], np.arange(self.layers + 1))
        for boundary in range(self.layers):
            group = order[starts[boundary] : starts[boundary + 1]]
            if len(group) == 0 or not np.isfinite(best[boundary]):
                continue
            reached = best[boundary] + cost[group]
            ends = self.last[group] + 1
            ranked = np.lexsort((reached, ends))  # by end, the cheapest first
            ends, reached, group = ends[ranked], reached[ranked], group[ranked]
            cheapest = np.r_[True, ends[1:] != ends[:-1]]
            ends, reached, group = ends[cheapest], reached[cheapest], group[cheapest]
            better = reached < best[ends]
            best[ends[better]], via[ends[better]] = reached[better], group[better]
        if not np.isfinite(best[self.layers]):
            return None
        chain, boundary = [], self.layers
        while boundary > 0:
            chain.append(int(via[boundary]))
            boundary = self.first[via[boundary]]
        return np.array(chain[::-1], dtype=np.int64)

    def priced_chain(self, rounds: int = PRICE_ROUNDS) -> np.ndarray | None:
        """A design that fits, found without the integer program, or None: the cheapest chain when
        each resource is priced by the share of the board's room it takes, the price of every
        resource the chain overruns raised by the overrun, round after round. A feasibility
        program near the least interval can take minutes where many designs are nearly alike
        (Graph Challenge 4096 x 120 with its weights in block RAM or UltraRAM); this finds one in
        a fraction of a second when a few resources bind. None proves nothing: the program decides."""
        if not self.candidates:
            return None
        share = self.resources / np.maximum(self.room, 1.0)
        prices = np.ones(share.shape[1])
        for _ in range(rounds):
            chain = self.cheapest_chain(share @ prices)
            if chain is None:
                return None
            if self.fits(chain):
                return chain
            prices *= np.maximum(1.0, share[chain].sum(axis=0)) ** 2
            prices /= prices.max()  # relative prices: no overflow however long it runs
        return None

    # Bounds by dynamic programming -------------------------------------------------------------

    def cover_bounds(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The least sum of each column of `weights` over the chains through each candidate, and
        over all chains, keeping to the board's channels (the other resources ignored). Exact, by
        dynamic programming over (boundary, memory channels used)."""
        n, width = weights.shape
        seats = min(self.channels, self.layers * STRIPES[-1]) + 1
        # before[a, s]: least cost of the layers < a using s memory channels
        before = np.full((self.layers + 1, seats, width), np.inf)
        before[0, 0] = 0.0
        # after[a, s]: least cost of the layers >= a using at most s channels (0 at the end, for any s)
        after = np.full((self.layers + 1, seats, width), np.inf)
        after[self.layers] = 0.0
        groups = [np.flatnonzero(self.first == a) for a in range(self.layers)]
        for a in range(self.layers):
            for uses in np.unique(self.ports):
                chosen = groups[a][self.ports[groups[a]] == uses]
                if len(chosen) == 0 or seats <= uses:
                    continue
                values = before[a, None, : seats - uses] + weights[chosen, None, :]
                np.minimum.at(before, (self.last[chosen, None] + 1, np.arange(uses, seats)[None, :]), values)
        for a in reversed(range(self.layers)):
            for uses in np.unique(self.ports):
                chosen = groups[a][self.ports[groups[a]] == uses]
                if len(chosen) == 0 or seats <= uses:
                    continue
                values = after[self.last[chosen] + 1, : seats - uses] + weights[chosen, None, :]
                after[a, uses:] = np.minimum(after[a, uses:], values.min(axis=0))
        through = np.full((n, width), np.inf)
        for s in range(seats):
            rest = seats - 1 - s - self.ports
            ok = rest >= 0
            value = before[self.first[ok], s] + weights[ok] + after[self.last[ok] + 1, rest[ok]]
            through[ok] = np.minimum(through[ok], value)
        return through, before[self.layers].min(axis=0)

    def least_chain(self, kind: int) -> np.ndarray | None:
        """The chain of least latency that keeps to the board's memory channels and to its room
        for the resource `kind`, the other resources ignored: a relaxation of the latency program,
        solved exactly by dynamic programming over (boundary, memory channels used, units of
        that resource used). None if there is no such chain.

        Units are the resource's counts, coarsened when the table would be too large (rounded
        down, so that it stays a relaxation)."""
        seats = min(self.channels, self.layers * STRIPES[-1]) + 1
        scale = max(1, math.ceil((self.layers + 1) * seats * (self.room[kind] + 1) / _DP_CELLS))
        units = (self.resources[:, kind] // scale).astype(np.int64)
        budget = int(self.room[kind] // scale)
        if budget < 0:
            return None
        # cost[a, s, b]: least latency of the layers < a using s memory channels and at most b units
        cost = np.full((self.layers + 1, seats, budget + 1), np.inf)
        cost[0, 0] = 0.0
        via = np.full(cost.shape, -1, dtype=np.int32)  # the candidate that ends the best chain there
        for c in np.argsort(self.first, kind="stable"):  # every chain into a boundary before leaving it
            u, uses, end = units[c], self.ports[c], self.last[c] + 1
            if u > budget or uses >= seats:
                continue
            reached = cost[self.first[c], : seats - uses, : budget + 1 - u] + self.latency[c]
            better = reached < cost[end, uses:, u:]
            cost[end, uses:, u:][better] = reached[better]
            via[end, uses:, u:][better] = c
        seat = int(np.argmin(cost[self.layers, :, budget]))
        if np.isinf(cost[self.layers, seat, budget]):
            return None
        chain, boundary, used = [], self.layers, budget
        while boundary > 0:
            c = int(via[boundary, seat, used])
            chain.append(c)
            boundary, seat, used = self.first[c], seat - self.ports[c], used - units[c]
        return np.array(chain[::-1], dtype=np.int64)

    # Integer programs ---------------------------------------------------------------------------

    def rows(self) -> _Rows:
        """The program's constraints: first a path through the layer boundaries (equalities, one per
        boundary), then the resources and the memory channels (upper bounds)."""
        rows = _Rows()
        for a in range(self.layers):
            starts, ends = np.flatnonzero(self.first == a), np.flatnonzero(self.last == a - 1)
            need = 1.0 if a == 0 else 0.0
            rows.add(np.concatenate([starts, ends]), np.r_[np.ones(len(starts)), -np.ones(len(ends))], need, need)
        every = np.arange(len(self.candidates))
        for k in range(len(RESOURCE_KINDS)):
            rows.add(every, self.resources[:, k], -np.inf, self.room[k])
        rows.add(every, self.ports, -np.inf, self.channels)
        return rows

    def program(self, objective: np.ndarray | None) -> np.ndarray | None:
        """The candidates of an optimal (or, without objective, any) design; None if there is none."""
        n = len(self.candidates)
        if n == 0:
            return None
        result = milp(
            np.zeros(n) if objective is None else objective,
            constraints=[self.rows().constraint(n)],
            integrality=np.ones(n),
            bounds=Bounds(0, 1),
            options={"mip_rel_gap": 0.0 if objective is None else LATENCY_GAP, "time_limit": PROGRAM_SECONDS},
        )
        if result.status == 2:  # infeasible
            return None
        if result.status == 1 and objective is not None and result.x is not None:
            self.timed_out.append("latency")  # out of time: its best design so far
        elif result.status == 1 and objective is None and result.x is None:
            self.timed_out.append("interval")  # out of time before any design: counted as none
            return None
        if result.x is None:
            raise FpgagenError(f"the scheduler's solver stopped without a design: {result.message}")
        return np.flatnonzero(result.x > 0.5)

    def prices(self) -> np.ndarray | None:
        """The duals (>= 0) of the resource rows in the linear relaxation of the latency program:
        what a unit of each resource is worth in cycles. None if even the relaxation has no design."""
        n = len(self.candidates)
        if n == 0:
            return None
        constraint = self.rows().constraint(n)
        path, limits = slice(0, self.layers), slice(self.layers, None)
        result = linprog(
            self.latency,
            A_ub=constraint.A[limits],
            b_ub=constraint.ub[limits],
            A_eq=constraint.A[path],
            b_eq=constraint.ub[path],
            bounds=(0, 1),
            method="highs",
        )
        if result.status == 2:  # infeasible
            return None
        if result.status != 0:
            raise FpgagenError(f"the scheduler's solver stopped without a design: {result.message}")
        return np.maximum(0.0, -result.ineqlin.marginals[: len(RESOURCE_KINDS)])


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


def solve(problem: Problem, objective: str, description: str) -> list[StageCost]:
    """The optimal stages in layer order; refuses a board no design fits."""
    fitting = fit_resources(problem)
    if objective == "throughput":
        found = least_interval(fitting)
        if found is None:
            raise shortfall(problem, description)
        fitting = fitting.subset(fitting.meets(found.interval))
    design = least_latency(fitting)
    if design is None:
        raise shortfall(problem, description)
    return [fitting.candidates[c] for c in design.chosen]


def fit_resources(problem: Problem) -> Problem:
    """Drop the candidates that no chain within the board's resources can contain."""
    if not problem.candidates:
        return problem
    through, _ = problem.cover_bounds(problem.resources)
    return problem.subset((through <= problem.room).all(axis=1))


def least_interval(problem: Problem) -> _Design | None:
    """A design of the least interval; None if there is no design at all.

    The search runs over the values an interval can take (the module docstring says why):
    upwards in doubling steps from a lower bound until a design is found, then by bisection.
    Small limits leave few candidates, so the steps are cheap where most of them fall.
    """
    values = np.unique(np.maximum(problem.interval, problem.reader.interval))
    low = int(np.searchsorted(values, _interval_floor(problem) * (1 - _REL_SLACK) - _ABS_SLACK))
    high = len(values) - 1
    best = None
    step = 1
    while low <= high:
        probe = min(high, low + step - 1) if best is None else (low + high) // 2
        design = _within(problem, values[probe])
        if design is None:
            low, step = probe + 1, step * 2
            continue
        best = design
        below = int(np.searchsorted(values, design.interval * (1 - _REL_SLACK) - _ABS_SLACK)) - 1
        high = min(below, probe - 1)  # the design meets values[probe]: look strictly lower
    return best


def _interval_floor(problem: Problem) -> float:
    """No design's interval is below this: every layer is covered by some candidate."""
    return float(max(problem.reader.interval, problem.fastest().max(initial=0.0)))


def _within(problem: Problem, limit: float) -> _Design | None:
    """Some design whose every interval is at most `limit`, or None."""
    sub = problem.subset(problem.meets(limit))
    through, least = sub.cover_bounds(sub.resources)
    if not (least <= sub.room).all():
        return None  # even the cheapest chain of each resource exceeds the board
    sub = sub.subset((through <= sub.room).all(axis=1) & ~sub.dominated())
    chosen = sub.priced_chain()
    if chosen is None:
        chosen = sub.program(None)
    return None if chosen is None else sub.evaluate(chosen)


def least_latency(problem: Problem) -> _Design | None:
    """A design of the least latency among the candidates of `problem`; None if there is none.

    With prices lambda >= 0 on the resources (the duals of the linear relaxation), a design D
    that fits has latency(D) >= sum_{c in D} (g_c + lambda r_c) - lambda room + reader, the
    Lagrangian bound. Its least value over the chains through candidate c (dynamic programming,
    `cover_bounds`) is a floor for every design that contains c. So the designs of latency at
    most T use only candidates whose floor is at most T: the least latency over those alone is
    the least of all whenever it is at most T. T starts just above the least floor and rises in
    growing steps, never above the best design found so far; the search at that limit is the last
    (exact up to the integer program's relative gap, LATENCY_GAP).
    """
    prices = problem.prices()
    if prices is None:
        return None
    through, least = problem.cover_bounds((problem.latency + problem.resources @ prices)[:, None])
    constant = problem.reader.latency - float(prices @ problem.room)
    floor, lowest = through[:, 0] + constant, float(least[0]) + constant
    reachable = np.isfinite(floor)  # the others are in no chain that keeps to the memory channels
    if not reachable.any():
        return None
    binding = int(np.argmax(prices * problem.room))  # the resource the relaxation finds scarcest
    best = None  # the least design found so far, above its limit
    margin = _MARGIN * abs(lowest) + _ABS_SLACK
    while True:
        capped = best is not None and lowest + margin >= best.latency
        limit = best.latency if capped else lowest + margin
        keep = floor <= _loosen(limit)
        timed_out = len(problem.timed_out)
        design = _least_latency_among(problem.subset(keep), binding)
        if design is None and keep[reachable].all():
            return None
        if design is not None:
            design.chosen = np.flatnonzero(keep)[design.chosen].tolist()
            if design.latency <= _loosen(limit):
                return design
            best = design if best is None or design.latency < best.latency else best
        if capped:
            # Every candidate of a design that beats `best` was in this search; the program's
            # relative gap (LATENCY_GAP) let it answer above `best`, and asking again would too.
            return best
        if len(problem.timed_out) > timed_out and best is not None:
            return best  # a wider search would only run out of time again
        margin *= 4


def _least_latency_among(problem: Problem, binding: int) -> _Design | None:
    """A design of the least latency, or None: the chain that keeps only to the `binding`
    resource (and the channels) is one whenever it fits the rest of the board, which saves the
    integer program (whose bound, on near-equal designs, closes slowly); the program sees only
    the candidates that no other one of the same layers beats in latency and every resource."""
    chain = problem.least_chain(binding)
    if chain is None:
        return None
    if not problem.fits(chain):
        keep = ~problem.dominated(latency=True)
        kept = np.flatnonzero(keep)
        chosen = problem.subset(keep).program(problem.latency[kept])
        chain = None if chosen is None else kept[chosen]
    return None if chain is None else problem.evaluate(chain)


def _loosen(value: float) -> float:
    """An optimum held in a later program, with room for the solver's round-off."""
    return value * (1 + _REL_SLACK) + _ABS_SLACK


def _describe(policy: str, pes: int | None) -> str:
    name = {"auto": "design", DATAFLOW: "dataflow design", SEQUENTIAL: "sequential design"}[policy]
    return name if pes is None else f"{name} with {pes} PEs per stage"


def limit(problem: Problem, interval: float, policy: str, pes: int | None) -> Limit:
    """Why no design's slowest stage takes fewer than `interval` cycles a vector, the least
    interval the search found: the reader takes that long; or some layer has no faster stage the
    engine builds (under the policy and P asked for); or the faster stages cannot be chained within
    the board: the resources even the cheapest such chain of each exceeds, or the channels, or all
    of them at once. The chains are `cover_bounds`', over every candidate faster than `interval`."""
    board = problem.cost.board
    description = _describe(policy, pes)
    cycles = f"{interval:,.1f} cycles a vector"
    if problem.reader.interval >= interval * (1 - _REL_SLACK) - _ABS_SLACK:
        reader, inputs = problem.reader, problem.cost.model.in_features
        beats = -(-inputs // reader.lanes) + 1
        how = (
            f"a beat of {reader.lanes} values a cycle takes {beats:,} cycles for the model's {inputs:,} inputs"
            if beats >= reader.interval * (1 - _REL_SLACK)
            else f"its serializers hand the nonzero inputs on, one a cycle each, in {cycles}"
        )
        return Limit("reader", f"the input reader: {how}")
    below = interval * (1 - _REL_SLACK) - _ABS_SLACK
    slow = np.flatnonzero(problem.fastest() >= below)  # layers no faster candidate runs
    if slow.size:
        cost = problem.cost
        through = np.flatnonzero((problem.first <= slow[0]) & (problem.last >= slow[0]))
        fastest = problem.candidates[through[np.argmin(problem.interval[through])]].stage
        names = [cost.layers[index].name for index in fastest.layers]
        one = len(names) == 1
        what = f"layer {names[0]}" if one else f"layers {names[0]} to {names[-1]} (one sequential stage)"
        if fastest.mode == SEQUENTIAL and any(c.bound == MEMORY_BOUND for c in cost.alone(fastest)):
            return Limit(
                "memory",
                f"{board.name}'s memory channels ({board.channel_gbps:g} GB/s each): {what} "
                f"{'waits for its' if one else 'wait for their'} weights; "
                f"its fastest stage, {_stage_words(fastest)}, takes {cycles}",
            )
        restriction = "" if description == "design" else f" for a {description}"
        wide = cost.layers[slow[0]].weights.shape[1] > MAX_OUT_LANES
        dense = slow[0] == problem.layers - 1 and fastest.mode == DATAFLOW and wide and pes is None
        return Limit(
            "engine",
            f"{what}: the engine builds no stage{restriction} that runs {'it' if one else 'them'} in fewer than "
            f"{cycles}; the fastest is {_stage_words(fastest)}" + (f" ({_DENSE_BEATS})" if dense else ""),
        )
    sub = problem.subset(problem.interval < below)
    _, least = sub.cover_bounds(sub.resources)
    if np.isinf(least).any():
        return Limit(
            "channels",
            f"{board.name}'s {board.channels} off-chip memory channel(s): no chain of stages faster than "
            f"{cycles} keeps to them",
        )
    needs = least + problem.reader.resources.as_tuple()
    budget = board_budget(board).as_tuple()
    short = [(kind, need, have) for kind, need, have in zip(RESOURCE_KINDS, needs, budget) if need > have]
    if len(short) == 1:
        kind, need, have = short[0]
        return Limit(
            kind,
            f"{board.name}'s {_UNITS[kind][1]}: a design whose every stage takes fewer than {cycles} "
            f"needs at least {need:,.0f}, the budget has {have:,}",
        )
    if short:
        each = "; ".join(f"{_UNITS[kind][1]} {need:,.0f} of {have:,}" for kind, need, have in short)
        return Limit(
            "resources",
            f"{board.name}'s resources: a design whose every stage takes fewer than {cycles} needs at least {each}",
        )
    return Limit(
        "resources",
        f"{board.name}'s resources together: a design whose every stage takes fewer than {cycles} fits each "
        "of them alone, but no such design fits all of them at once",
    )


_DENSE_BEATS = f"the model's last stage drains dense beats of its P values, at most {MAX_OUT_LANES}"


def _stage_words(stage: Stage) -> str:
    """A stage's shape in a message: "a dataflow stage of P = 64, K = 4 shared PEs"."""
    if stage.mode == SEQUENTIAL:
        return f"a sequential stage of P = {stage.pes}"
    return f"a dataflow stage of P = {stage.pes}, K = {stage.units} {'private' if stage.private else 'shared'} PEs"


def shortfall(problem: Problem, description: str) -> DoesNotFit:
    """Why no candidate chain fits the board: the resources even the smallest design exceeds."""
    board = problem.cost.board
    model = problem.cost.model.name
    missing = np.setdiff1d(np.arange(problem.layers), problem.runs()[0])  # layers no candidate runs
    if problem.candidates and missing.size:
        index = int(missing[0])
        dense = index == problem.layers - 1  # no dataflow stage of more than MAX_OUT_LANES PEs for it
        return DoesNotFit(
            f"no {description} can be built for model {model}: the engine builds no such stage for layer "
            f"{problem.cost.layers[index].name}" + (f" ({_DENSE_BEATS})" if dense else "")
        )
    if not problem.candidates:
        # Only sequential stages can be refused outright: dataflow ones of every P up to MAX_OUT_LANES exist.
        stripes = max(c for c in STRIPES if c <= max(1, board.channels))
        return DoesNotFit(
            f"no {description} can be built for model {model}: a sequential stage's beat is its P "
            f"off-chip slots of 8, 16 or 32 bits (as its addresses and weights need), at most {MAX_PORT_BITS} "
            f"bits a channel, over at most {stripes} of {board.name}'s memory channels"
        )
    _, least = problem.cover_bounds(problem.resources)
    if np.isinf(least).any():
        return DoesNotFit(
            f"{board.name} has {board.channels} off-chip memory channel(s), one or more per sequential stage; "
            f"no {description} for model {model} fits in that many",
            ("channels",),
        )
    needs = least + problem.reader.resources.as_tuple()
    budget = board_budget(board).as_tuple()
    shell = " besides its shell" if board.has_shell else ""
    short = [(kind, need, have) for kind, need, have in zip(RESOURCE_KINDS, needs, budget) if need > have]
    if short:
        message = "; ".join(
            f"{board.name} is short of {_UNITS[kind][0]}: the smallest {description} needs {need:,.0f} "
            f"{_UNITS[kind][1]}, the board has {have:,}{shell} ({need - have:,.0f} short)"
            for kind, need, have in short
        )
        return DoesNotFit(message, tuple(_UNITS[kind][0] for kind, _, _ in short))
    each = ", ".join(f"{need:,.0f} {_UNITS[kind][1]}" for kind, need in zip(RESOURCE_KINDS, needs))
    have = ", ".join(f"{count:,} {_UNITS[kind][1]}" for kind, count in zip(RESOURCE_KINDS, budget))
    return DoesNotFit(
        f"no {description} for model {model} fits every resource of {board.name} at once, though each "
        f"resource alone would (the least each needs: {each}; the board has {have}{shell})"
    )
