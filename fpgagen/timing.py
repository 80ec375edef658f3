"""Logic depth of a synthesized design: LUT levels on every path of a Yosys netlist.

Reads the JSON netlist Yosys writes after `synth_xilinx -family xcup -flatten` (`write_json`) and
finds, for every timing endpoint, the most LUT levels between it and a path start, by one
topological longest-path pass over the combinational graph (linear in the netlist's size). The
graph is built per net bit, so a multi-bit cell adds only the dependencies it really has (an
adder's sum bit i does not depend on its operands' bits above i).

Counting rules (docs/engine.md, "Logic depth"):

- Path starts: the outputs of flip-flops (FDRE, FDSE, FDCE, FDPE) and latches (LDCE, LDPE), of
  block RAMs, FIFOs and UltraRAMs (RAMB18E2, RAMB36E2, FIFO18E2, FIFO36E2, URAM288), of DSP48E2
  output registers (PREG=1), of shift registers and LUT RAMs read at a constant address, and the
  design's input ports.
- Path ends: every input of those cells except the clock (data, clock enable, synchronous and
  asynchronous set/reset, block RAM address/data/enable/write enable); the write side of LUT
  RAMs and shift registers (data, write enable, write address); and the output ports.
- LUT1..LUT6 (and INV, Yosys's name for an inverting LUT1) count one level each.
- MUXF7/MUXF8/MUXF9, CARRY4/CARRY8 and the I/O and clock buffers count no level but are crossed.
  Yosys 0.70 maps adders and comparators to CARRY4 even for xcup (Vivado packs two into a
  CARRY8); the worst path's longest run of chained carry cells is reported beside its levels, in
  cells and in carry bits, and among paths of equal levels the one with more carry bits is the
  worse.
- A LUT RAM or shift register read at a variable address is one LUT level from its address (the
  read is a LUT's 6-input mux); its write is synchronous.
- A DSP48E2 counts as a path boundary wherever its internal registers (AREG, BREG, CREG, DREG,
  INMODEREG, OPMODEREG, ALUMODEREG, CARRYINREG, CARRYINSELREG, MREG, PREG) make it one. A path
  that crosses its multiplier or ALU combinationally, into an internal register or out of an
  unregistered P, counts DSP_LEVELS (4) levels: Yosys's own timing model (xilinx/cells_sim.v, the
  delays ABC9 maps against) puts an unregistered multiply at 2.7-2.8 ns from A or B to P, against
  at most 0.64 ns through a LUT6, so with each LUT level's routing it is about four levels; and
  counting it keeps an unregistered multiplier visible instead of hiding it as zero. Paths between
  a DSP's own registers are the DSP's business (its rated clock) and are not counted. Yosys 0.70
  packs A/B/M/P registers into DSPs only for 7-series: in an xcup netlist every inferred
  multiplier is unregistered.
- Clock pins are not endpoints and clock nets are not paths.

A combinational loop is a failed check that names the cells on it. A cell type these rules do
not cover is an error: a silent guess would make the figure wrong.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import networkx as nx

from .errors import CheckFailed, FpgagenError

DSP_LEVELS = 4

# Path keys pack (LUT levels, carry bits) into one integer, so one longest-path pass maximizes
# levels first and carry bits among equals.
LEVEL = 1 << 20
CARRY_BIT = 1

_LUTS = {"LUT1", "LUT2", "LUT3", "LUT4", "LUT5", "LUT6", "LUT6_2", "INV"}
_CROSSED = {"MUXF7", "MUXF8", "MUXF9", "IBUF", "IBUFG", "OBUF", "BUFG", "BUFGCE", "BUFGCTRL"}
_CARRIES = {"CARRY4": 4, "CARRY8": 8}
_SEQUENTIAL = {
    "FDRE", "FDSE", "FDCE", "FDPE", "LDCE", "LDPE",
    "RAMB18E2", "RAMB36E2", "FIFO18E2", "FIFO36E2", "URAM288", "URAM288_BASE",
}  # fmt: skip
_CLOCK_PINS = {"C", "CLK", "G", "WCLK", "CLKARDCLK", "CLKBWRCLK", "RDCLK", "WRCLK"}
_IGNORED = {"GND", "VCC"}  # constants: they start no path


def _bits(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(count))


@dataclass(frozen=True)
class _LutRam:
    reads: dict[str, tuple[str, ...]]  # read data output -> its address inputs
    write_address: tuple[str, ...]  # address inputs that also (or only) address the write


def _multiport(ports: str, write: str) -> _LutRam:
    return _LutRam({f"DO{p}": (f"ADDR{p}",) for p in ports}, (f"ADDR{write}",))


def _dual_port(address: tuple[str, ...], read_address: tuple[str, ...]) -> _LutRam:
    return _LutRam({"SPO": address, "DPO": read_address}, address)


_LUT_RAMS = {
    "RAM32M": _multiport("ABCD", "D"),
    "RAM64M": _multiport("ABCD", "D"),
    "RAM32M16": _multiport("ABCDEFGH", "H"),
    "RAM64M8": _multiport("ABCDEFGH", "H"),
    "RAM32X16DR8": _multiport("ABCDEFGH", "H"),
    "RAM16X1D": _dual_port(_bits("A", 4), _bits("DPRA", 4)),
    "RAM32X1D": _dual_port(_bits("A", 5), _bits("DPRA", 5)),
    "RAM64X1D": _dual_port(_bits("A", 6), _bits("DPRA", 6)),
    "RAM128X1D": _dual_port(("A",), ("DPRA",)),
    "RAM256X1D": _dual_port(("A",), ("DPRA",)),
    "RAM16X1S": _LutRam({"O": _bits("A", 4)}, _bits("A", 4)),
    "RAM32X1S": _LutRam({"O": _bits("A", 5)}, _bits("A", 5)),
    "RAM64X1S": _LutRam({"O": _bits("A", 6)}, _bits("A", 6)),
    "RAM128X1S": _LutRam({"O": _bits("A", 7)}, _bits("A", 7)),
    "RAM256X1S": _LutRam({"O": ("A",)}, ("A",)),
    "RAM64X8SW": _LutRam({"O": ("A",)}, ("A",)),
    # Shift registers: Q reads the stage the address picks; Q15/Q31 are the last stage, a register.
    "SRL16E": _LutRam({"Q": _bits("A", 4)}, ()),
    "SRLC16E": _LutRam({"Q": _bits("A", 4)}, ()),
    "SRLC32E": _LutRam({"Q": ("A",)}, ()),
}

# DSP48E2 inputs: the register that ends a path at them (None: no register, e.g. cascades).
_DSP_MULTIPLIER_INPUTS = {"A": "AREG", "ACIN": "AREG", "B": "BREG", "BCIN": "BREG", "D": "DREG", "INMODE": "INMODEREG"}
_DSP_ALU_INPUTS = {
    "C": "CREG", "OPMODE": "OPMODEREG", "ALUMODE": "ALUMODEREG", "CARRYIN": "CARRYINREG",
    "CARRYINSEL": "CARRYINSELREG", "PCIN": None, "CARRYCASCIN": None, "MULTSIGNIN": None,
}  # fmt: skip
_DSP_CASCADE_OUTPUTS = {"ACOUT": ("A", "AREG"), "BCOUT": ("B", "BREG")}
_DSP_CROSSING = "combinational multiply-add"
_FED_BY = 6  # named input signals listed per path cell


class TimingError(FpgagenError):
    """The netlist cannot be timed: unreadable, no path, or a cell these rules do not cover."""


class CombinationalLoop(CheckFailed):
    """The netlist has a combinational loop: the design is broken (exit code 1, as a latch)."""


@dataclass(frozen=True)
class PathPoint:
    """One step of a path: the cell (or top-level port) driving a net, or the endpoint's pin."""

    cell: str  # hierarchical instance name (a register is named by the signal it holds)
    type: str  # primitive ("FDRE", "LUT6", "CARRY4", ...) or "port"
    pin: str  # the pin, with its bit: "Q", "O", "P[12]", "DOUTADOUT[3]"
    net: str  # the net's name at this pin ("" when synthesis kept none)
    source: tuple[str, ...]  # Verilog source lines ("fg_lane_reader.v:45")
    levels: int = 0  # the LUT levels this step adds (the path's steps sum to its levels)
    # The named signals among the cell's inputs: ABC names the LUTs it builds itself
    # ($abc$...), so what feeds a LUT is what tells where in the Verilog it is.
    fed_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class CarryChain:
    cells: int  # chained carry cells
    bits: int  # carry bits they propagate through
    type: str  # "CARRY4" or "CARRY8" ("" when the path crosses none)


@dataclass(frozen=True)
class LogicDepth:
    """The worst path of a netlist, and how endpoint depths are distributed."""

    levels: int  # LUT levels of the worst path (DSP crossings included)
    start: PathPoint
    end: PathPoint
    carry_chain: CarryChain  # the longest run of chained carry cells on the worst path
    dsp_crossings: int  # combinational DSP48E2 crossings on the worst path (DSP_LEVELS each)
    path: tuple[PathPoint, ...]  # start ... end
    histogram: dict[int, int]  # levels -> endpoints (pin bits) that deep
    endpoints: int
    worst_by_file: dict[str, dict]  # endpoint's Verilog file -> {levels, start, end} of its worst path

    def to_json(self) -> dict:
        report = asdict(self)
        report["histogram"] = {str(levels): count for levels, count in sorted(self.histogram.items())}
        return report

    def summary(self) -> str:
        chain = self.carry_chain
        carry = f", carry chain {chain.cells} x {chain.type} ({chain.bits} bits)" if chain.cells else ""
        dsp = f", {self.dsp_crossings} combinational DSP48E2" if self.dsp_crossings else ""
        return f"{self.levels} LUT levels{carry}{dsp}: {_point_text(self.start)} -> {_point_text(self.end)}"


def _point_text(point: PathPoint) -> str:
    where = f" ({', '.join(point.source)})" if point.source else ""
    return f"{point.cell} [{point.type}.{point.pin}]{where}"


def read_netlist(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise TimingError(f"cannot read the Yosys netlist {path}: {exc}") from exc


def logic_depth(netlist: dict, top: str | None = None) -> LogicDepth:
    """The worst path of the module `top` (default: the one Yosys marked top) of a flattened
    Yosys JSON netlist, by the counting rules of this module's docstring."""
    module = _top_module(netlist, top)
    graph = _TimingGraph(module)
    depth, via = graph.longest_paths()
    return _Report(graph, depth, via).logic_depth()


def _top_module(netlist: dict, top: str | None) -> dict:
    modules = netlist.get("modules", {})
    if top is None:
        tops = [name for name, module in modules.items() if _int(module.get("attributes", {}).get("top", 0))]
        if len(tops) != 1:
            raise TimingError(f"the netlist has {len(tops)} top modules ({', '.join(tops)}); name one")
        top = tops[0]
    if top not in modules:
        raise TimingError(f"the netlist has no module {top!r}")
    return modules[top]


def _int(value) -> int:
    """A Yosys JSON parameter or attribute: an int, or a string of binary digits."""
    if isinstance(value, int):
        return value
    text = str(value).strip()
    return int(text, 2) if text and set(text) <= {"0", "1"} else int(text)


# -- the graph -------------------------------------------------------------------------------------


class _TimingGraph:
    """Nodes are net bits plus a few per-cell internal points (carry stages, DSP sections). Every
    node has a weight (the levels it adds), its predecessors, and may be a path start."""

    def __init__(self, module: dict):
        self.cells: list[tuple[str, dict]] = list(module["cells"].items())
        self.netnames: dict[str, dict] = module.get("netnames", {})
        self.scopes: dict[str, tuple[str, ...]] = {}  # instance -> its module's source line
        self.preds: list[list[int]] = []
        self.weight: list[int] = []
        self.start: list[bool] = []
        self.origin: list[tuple] = []  # (cell index, pin or part) or ("port", port bit) or ("net",)
        self.node_of_bit: dict[int, int] = {}
        self.endpoints: list[tuple[int, int, int, str]] = []  # (node, extra weight, cell index, pin)
        for name, port in module.get("ports", {}).items():
            for index, bit in enumerate(port["bits"]):
                if isinstance(bit, str):
                    continue
                label = f"{name}[{index}]" if len(port["bits"]) > 1 else name
                if port["direction"] in ("input", "inout"):
                    node = self._net(bit)
                    self.start[node] = True
                    self.origin[node] = ("port", label)
                if port["direction"] in ("output", "inout"):
                    self.endpoints.append((self._net(bit), 0, -1, label))
        for index, (name, cell) in enumerate(self.cells):
            self._add_cell(index, name, cell)

    # nodes -------------------------------------------------------------------------------------------

    def _node(self, weight: int = 0, start: bool = False, origin: tuple = ("net",)) -> int:
        self.preds.append([])
        self.weight.append(weight)
        self.start.append(start)
        self.origin.append(origin)
        return len(self.preds) - 1

    def _net(self, bit: int) -> int:
        node = self.node_of_bit.get(bit)
        if node is None:
            node = self.node_of_bit[bit] = self._node()
        return node

    def _inputs(self, bits: Iterable) -> list[int]:
        """Nodes of the non-constant bits among `bits` (constants '0', '1', 'x', 'z' start nothing)."""
        return [self._net(bit) for bit in bits if not isinstance(bit, str)]

    def _drive(self, index: int, port: str, bits: list, weight: int = 0, start: bool = False,
               preds: list[int] = ()) -> None:  # fmt: skip
        """The cell's output `port` drives its net bits, each with `preds` and `weight`."""
        for offset, bit in enumerate(bits):
            if isinstance(bit, str):
                continue
            node = self._net(bit)
            self.preds[node] = list(preds)
            self.weight[node] = weight
            self.start[node] = start
            self.origin[node] = (index, f"{port}[{offset}]" if len(bits) > 1 else port)

    def _end(self, index: int, port: str, bits: list) -> None:
        """The cell's input `port` ends paths: each non-constant bit is an endpoint."""
        for offset, bit in enumerate(bits):
            if not isinstance(bit, str):
                self.endpoints.append((self._net(bit), 0, index, f"{port}[{offset}]" if len(bits) > 1 else port))

    # cells -------------------------------------------------------------------------------------------

    def _add_cell(self, index: int, name: str, cell: dict) -> None:
        kind = cell["type"]
        connections = cell["connections"]
        directions = cell.get("port_directions", {})
        inputs = {p: bits for p, bits in connections.items() if directions.get(p) == "input"}
        outputs = {p: bits for p, bits in connections.items() if directions.get(p) == "output"}
        if kind == "$scopeinfo":  # an instance flattening removed: its name and module source
            module_source = _design_sources(cell.get("attributes", {}).get("module_src", ""))
            self.scopes[_display(name)] = module_source
            return
        if kind in _IGNORED:
            return
        if kind in _LUTS or kind in _CROSSED:
            preds = self._inputs(bit for bits in inputs.values() for bit in bits)
            weight = LEVEL if kind in _LUTS else 0
            for port, bits in outputs.items():
                self._drive(index, port, bits, weight, preds=preds)
        elif kind in _CARRIES:
            self._add_carry(index, cell, _CARRIES[kind])
        elif kind in _SEQUENTIAL:
            for port, bits in inputs.items():
                if port not in _CLOCK_PINS:
                    self._end(index, port, bits)
            for port, bits in outputs.items():
                self._drive(index, port, bits, start=True)
        elif kind in _LUT_RAMS:
            self._add_lut_ram(index, _LUT_RAMS[kind], inputs, outputs)
        elif kind == "DSP48E2":
            self._add_dsp(index, cell, inputs, outputs)
        else:
            raise TimingError(f"cell {_display(name)} has type {kind}, which the LUT-level rules do not cover")

    def _add_carry(self, index: int, cell: dict, width: int) -> None:
        """One node per carry bit: bit i's carry depends on S[i], DI[i] and bit i-1's carry; O[i]
        and CO[i] come out of it (O[i] = S[i] xor carry in, so its DI[i] dependency is slightly
        pessimistic). CARRY8 in DUAL_CY4 mode restarts at bit 4 from CI_TOP."""
        connections = cell["connections"]
        dual = str(cell.get("parameters", {}).get("CARRY_TYPE", "")).strip() == "DUAL_CY4"
        carry_in = self._inputs(connections.get("CI", []) + connections.get("CYINIT", []))
        for bit in range(width):
            if dual and bit == 4:
                carry_in = self._inputs(connections.get("CI_TOP", []))
            stage = self._node(CARRY_BIT, origin=(index, f"carry bit {bit}"))
            self.preds[stage] = carry_in + self._inputs(
                [connections[port][bit] for port in ("S", "DI") if port in connections]
            )
            for port in ("O", "CO"):
                if port in connections:
                    self._drive(index, f"{port}[{bit}]", [connections[port][bit]], preds=[stage])
            carry_in = [stage]

    def _add_lut_ram(self, index: int, ram: _LutRam, inputs: dict, outputs: dict) -> None:
        read_only = {port for address in ram.reads.values() for port in address} - set(ram.write_address)
        for port, bits in inputs.items():
            if port not in _CLOCK_PINS and port not in read_only:
                self._end(index, port, bits)
        for port, bits in outputs.items():
            address = self._inputs(bit for p in ram.reads.get(port, ()) for bit in inputs.get(p, []))
            # A read at a variable address is a LUT level from the address (or from the stored
            # word, at the clock); at a constant address the output is a register's.
            self._drive(index, port, bits, LEVEL if address else 0, start=True, preds=address)

    def _add_dsp(self, index: int, cell: dict, inputs: dict, outputs: dict) -> None:
        """Two sections, the multiplier (with the pre-adder) and the ALU. A path from the fabric
        enters a section through its unregistered inputs and counts DSP_LEVELS when it reaches an
        internal register (M or P) or leaves by an unregistered P; a path from an internal
        register counts DSP_LEVELS when it leaves by an unregistered P."""
        parameters = cell.get("parameters", {})

        def registered(parameter: str | None) -> bool:
            return parameter is not None and _int(parameters.get(parameter, 1)) > 0

        sections, internal = {}, {}
        for group, table in (("multiplier", _DSP_MULTIPLIER_INPUTS), ("alu", _DSP_ALU_INPUTS)):
            sections[group], internal[group] = [], False
            for port, bits in inputs.items():
                if port not in table:
                    continue
                if registered(table[port]):
                    self._end(index, port, bits)
                    internal[group] |= any(not isinstance(bit, str) for bit in bits)
                else:
                    sections[group] += self._inputs(bits)
        for port, bits in inputs.items():  # clock enables and resets of the internal registers
            if port.startswith(("CE", "RST")):
                self._end(index, port, bits)
        for port, (source, register) in _DSP_CASCADE_OUTPUTS.items():
            if port in outputs:  # a dedicated wire from the A (B) input or its register
                cascade = [] if registered(register) else self._inputs(inputs.get(source, []))
                self._drive(index, port, outputs[port], start=registered(register), preds=cascade)
        if registered("MREG"):
            if sections["multiplier"]:
                multiplier = self._node(origin=(index, "multiplier"))
                self.preds[multiplier] = sections["multiplier"]
                self.endpoints.append((multiplier, DSP_LEVELS * LEVEL, index, "M register"))
            internal["alu"] = True
        else:
            sections["alu"] += sections["multiplier"]
            internal["alu"] |= internal["multiplier"]
        results = {port: bits for port, bits in outputs.items() if port not in _DSP_CASCADE_OUTPUTS}
        if registered("PREG"):
            if sections["alu"]:
                alu = self._node(origin=(index, "ALU"))
                self.preds[alu] = sections["alu"]
                self.endpoints.append((alu, DSP_LEVELS * LEVEL, index, "P register"))
            for port, bits in results.items():
                self._drive(index, port, bits, start=True)
        else:
            crossing = self._node(DSP_LEVELS * LEVEL, start=internal["alu"], origin=(index, _DSP_CROSSING))
            self.preds[crossing] = sections["alu"]
            for port, bits in results.items():
                self._drive(index, port, bits, preds=[crossing])

    # the longest paths ---------------------------------------------------------------------------------

    def longest_paths(self) -> tuple[list[int], list[int]]:
        """depth[node]: the largest path key from a start up to and including the node (-1 when no
        start reaches it); via[node]: the predecessor on that path (-1 at the start)."""
        count = len(self.preds)
        successors: list[list[int]] = [[] for _ in range(count)]
        waiting = [0] * count
        for node, preds in enumerate(self.preds):
            waiting[node] = len(preds)
            for pred in preds:
                successors[pred].append(node)
        depth, via = [-1] * count, [-1] * count
        ready = [node for node in range(count) if waiting[node] == 0]
        done = 0
        while ready:
            node = ready.pop()
            done += 1
            best, best_pred = (0 if self.start[node] else -1), -1
            for pred in self.preds[node]:
                if depth[pred] >= 0 and depth[pred] >= best:
                    best, best_pred = depth[pred], pred
            if best >= 0:
                depth[node], via[node] = best + self.weight[node], best_pred
            for successor in successors[node]:
                waiting[successor] -= 1
                if waiting[successor] == 0:
                    ready.append(successor)
        if done < count:
            self._raise_loop([node for node in range(count) if waiting[node] > 0])
        return depth, via

    def _raise_loop(self, stuck: list[int]) -> None:
        graph = nx.DiGraph()
        members = set(stuck)
        graph.add_edges_from((pred, node) for node in stuck for pred in self.preds[node] if pred in members)
        loop = [node for node, _ in nx.find_cycle(graph)]
        cells = []
        for node in loop:
            origin = self.origin[node]
            if isinstance(origin[0], int):
                name, cell = self.cells[origin[0]]
                text = f"{_display(name)} ({cell['type']})"
                if text not in cells:
                    cells.append(text)
        raise CombinationalLoop(f"combinational loop through {len(cells)} cells: {', '.join(cells)}")


# -- the report --------------------------------------------------------------------------------------


class _Report:
    """Paths traced back from the endpoints, named by the netlist's cells, nets and sources."""

    def __init__(self, graph: _TimingGraph, depth: list[int], via: list[int]):
        self.graph, self.depth, self.via = graph, depth, via
        self.bit_of_node = {node: bit for bit, node in graph.node_of_bit.items()}
        self._names: dict[int, tuple[str, tuple[str, ...]]] | None = None

    def logic_depth(self) -> LogicDepth:
        endpoints = self.graph.endpoints
        scored = [
            (self.depth[node] + extra, position)
            for position, (node, extra, _, _) in enumerate(endpoints)
            if self.depth[node] >= 0
        ]
        if not scored:
            raise TimingError("the netlist has no timing path (no register or port reaches another)")
        worst_key, worst = max(scored)
        path = self._path(worst)
        return LogicDepth(
            levels=worst_key // LEVEL,
            start=path[0],
            end=path[-1],
            carry_chain=self._carry_chain(worst),
            dsp_crossings=sum(self._is_dsp_crossing(node) for node in self._nodes(worst)) + (endpoints[worst][1] > 0),
            path=tuple(path),
            histogram=dict(sorted(Counter(key // LEVEL for key, _ in scored).items())),
            endpoints=len(scored),
            worst_by_file=self._worst_by_file(scored),
        )

    def _worst_by_file(self, scored: list[tuple[int, int]]) -> dict[str, dict]:
        worst: dict[str, tuple[int, int]] = {}
        for key, position in scored:
            source = self._endpoint_file(position)
            if source not in worst or key > worst[source][0]:
                worst[source] = (key, position)
        report = {}
        for source, (key, position) in sorted(worst.items(), key=lambda item: -item[1][0]):
            path = self._path(position)
            report[source] = {"levels": key // LEVEL, "start": asdict(path[0]), "end": asdict(path[-1])}
        return report

    def _nodes(self, position: int) -> list[int]:
        """The nodes of the deepest path into endpoint `position`, start first."""
        nodes, node = [], self.graph.endpoints[position][0]
        while node >= 0:
            nodes.append(node)
            node = self.via[node]
        return nodes[::-1]

    def _cell_index(self, node: int) -> int | None:
        origin = self.graph.origin[node]
        return origin[0] if isinstance(origin[0], int) else None

    def _is_dsp_crossing(self, node: int) -> bool:
        return self._cell_index(node) is not None and self.graph.origin[node][1] == _DSP_CROSSING

    def _path(self, position: int) -> list[PathPoint]:
        """The start, every net the path crosses (named by the cell pin driving it), and the
        endpoint pin. Carry bits and DSP sections are inside their cell: their levels go to the
        cell's output."""
        points, pending = [], 0
        for node in self._nodes(position):
            origin = self.graph.origin[node]
            pending += self.graph.weight[node]
            if origin[0] == "port":
                point = PathPoint(origin[1], "port", origin[1], self._net_name(node), self._net_source(node))
            elif node in self.bit_of_node and self._cell_index(node) is not None:
                point = self._cell_point(origin[0], origin[1], node)
            else:
                continue
            points.append(replace(point, levels=pending // LEVEL))
            pending = 0
        node, extra, index, pin = self.graph.endpoints[position]
        if index < 0:
            points.append(PathPoint(pin, "port", pin, pin, self._net_source(node)))
        else:
            points.append(replace(self._cell_point(index, pin, None), levels=(pending + extra) // LEVEL))
        return points

    def _cell_point(self, index: int, pin: str, node: int | None) -> PathPoint:
        """The cell's pin `pin`: the path's endpoint (node None), or its output driving `node`."""
        _, cell = self.graph.cells[index]
        name, source = self._instance(index)
        if node is None:
            return PathPoint(name, cell["type"], pin, "", source)
        source = tuple(dict.fromkeys(source + self._net_source(node)))
        fed_by = ()
        if cell["type"] not in _SEQUENTIAL:
            directions = cell.get("port_directions", {})
            inputs = (b for p, bits in cell["connections"].items() if directions.get(p) == "input" for b in bits)
            named = (self._names_of().get(bit, ("", ()))[0] for bit in inputs if not isinstance(bit, str))
            fed_by = tuple(dict.fromkeys(label for label in named if label))[:_FED_BY]
        return PathPoint(name, cell["type"], pin, self._net_name(node), source, fed_by=fed_by)

    def _instance(self, index: int) -> tuple[str, tuple[str, ...]]:
        """A cell's hierarchical name and Verilog source lines.

        A cell Yosys named itself ($auto$..., $abc$...) takes the name of the signal on its first
        named output, as a register is named by what it holds, and that signal's declaration
        joins its own `src` (a register's always block). A named cell whose `src` points only
        into Yosys's techmap library (a RAM mapped from a memory, `u_rows.mem.0.0`) takes the
        module it sits in."""
        name, cell = self.graph.cells[index]
        display = _display(name)
        source = _design_sources(cell.get("attributes", {}).get("src", ""))
        if not display.startswith("$"):
            return display, source or self._scope_source(display)
        directions = cell.get("port_directions", {})
        for bit in (b for p, bits in cell["connections"].items() if directions.get(p) == "output" for b in bits):
            if not isinstance(bit, str) and bit in self._names_of():
                signal, signal_source = self._names_of()[bit]
                return signal, tuple(dict.fromkeys(source + signal_source)) or self._scope_source(signal)
        return display, source

    def _scope_source(self, name: str) -> tuple[str, ...]:
        """The Verilog module of the innermost instance whose name prefixes `name`."""
        while "." in name:
            name = name.rsplit(".", 1)[0]
            if name in self.graph.scopes:
                return self.graph.scopes[name]
        return ()

    def _endpoint_file(self, position: int) -> str:
        _, _, index, _ = self.graph.endpoints[position]
        if index < 0:
            return "(output ports)"
        sources = self._instance(index)[1]
        return sources[0].split(":")[0] if sources else "(no source)"

    def _carry_chain(self, position: int) -> CarryChain:
        """The longest run of consecutive carry cells on the path into endpoint `position`."""
        best, cells, bits = (0, 0, ""), [], 0
        for node in self._nodes(position):
            index = self._cell_index(node)
            kind = self.graph.cells[index][1]["type"] if index is not None else ""
            if kind in _CARRIES:
                if not cells or cells[-1] != index:
                    cells.append(index)
                bits += self.graph.weight[node] == CARRY_BIT
                best = max(best, (len(cells), bits, kind))
            else:
                cells, bits = [], 0
        return CarryChain(*best)

    # names -------------------------------------------------------------------------------------------

    def _names_of(self) -> dict[int, tuple[str, tuple[str, ...]]]:
        """Net bit -> the shortest name synthesis kept for it (with the bit) and its Verilog source."""
        if self._names is None:
            self._names = {}
            for name, net in self.graph.netnames.items():
                if net.get("hide_name"):
                    continue
                offset = _int(net.get("offset", 0))
                source = _design_sources(net.get("attributes", {}).get("src", ""))
                for index, bit in enumerate(net["bits"]):
                    label = f"{name}[{index + offset}]" if len(net["bits"]) > 1 else name
                    if not isinstance(bit, str) and (bit not in self._names or len(label) < len(self._names[bit][0])):
                        self._names[bit] = (label, source)
        return self._names

    def _net_name(self, node: int) -> str:
        return self._names_of().get(self.bit_of_node.get(node), ("", ()))[0]

    def _net_source(self, node: int) -> tuple[str, ...]:
        return self._names_of().get(self.bit_of_node.get(node), ("", ()))[1]


def _display(name: str) -> str:
    """A Yosys name as a user reads it: `$flatten\\u_core.\\u_pes.$mul$...` -> `u_core.u_pes.$mul$...`."""
    return name.removeprefix("$flatten").replace("\\", "")


_SOURCE = re.compile(r"^(?P<file>[^:|]+):(?P<line>\d+)")


def _design_sources(src: str) -> tuple[str, ...]:
    """`file:line` of each location in a Yosys `src` attribute that is the design's own Verilog,
    not a Yosys techmap library file (those live under Yosys's share folder)."""
    lines = []
    for entry in str(src).split("|"):
        match = _SOURCE.match(entry)
        if match and "/share/" not in "/" + match["file"]:
            text = f"{match['file']}:{match['line']}"
            if text not in lines:
                lines.append(text)
    return tuple(lines)
