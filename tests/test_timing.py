"""Logic depth (fpgagen/timing.py): the counting rules on small modules synthesized by Yosys
(`synth_xilinx -family xcup`), on hand-built netlists for what Yosys does not produce, and on a
real fpgagen design through `fpgagen synth`."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from designs import mlp_design

from fpgagen.synth import yosys_command
from fpgagen.timing import DSP_LEVELS, CombinationalLoop, TimingError, logic_depth, read_netlist

# -- small modules, one Yosys run for all ------------------------------------------------------------

MODULES = {
    # register -> three chained LUT6 (instantiated, so ABC cannot remap them) -> register
    "lut_chain": """
module lut_chain (input clk, input [15:0] a, output reg y);
    reg [15:0] r;
    wire l1, l2, l3;
    always @(posedge clk) begin
        r <= a;
        y <= l3;
    end
    LUT6 #(.INIT(64'h6996966996696996)) u_l1 (.O(l1), .I0(r[0]), .I1(r[1]), .I2(r[2]), .I3(r[3]), .I4(r[4]), .I5(r[5]));
    LUT6 #(.INIT(64'h6996966996696996)) u_l2 (.O(l2), .I0(l1), .I1(r[6]), .I2(r[7]), .I3(r[8]), .I4(r[9]), .I5(r[10]));
    LUT6 #(.INIT(64'h6996966996696996)) u_l3 (.O(l3), .I0(l2), .I1(r[11]), .I2(r[12]), .I3(r[13]), .I4(r[14]), .I5(r[15]));
endmodule
""",
    # register -> 16-bit adder -> register
    "adder": """
module adder (input clk, input [15:0] a, input [15:0] b, output reg [15:0] y);
    reg [15:0] ra, rb;
    always @(posedge clk) begin
        ra <= a;
        rb <= b;
        y <= ra + rb;
    end
endmodule
""",
    # register -> LUT-RAM read (distributed RAM, asynchronous read) -> register
    "lutram": """
module lutram (input clk, input we, input [5:0] wa, input [5:0] ra, input [7:0] d, output reg [7:0] q);
    reg [7:0] mem [0:63];
    reg [5:0] ra_r;
    always @(posedge clk) begin
        if (we) mem[wa] <= d;
        ra_r <= ra;
        q <= mem[ra_r];
    end
endmodule
""",
    # a shift register (SRL16E, constant address) -> LUT -> register
    "shift": """
module shift (input clk, input d, input e, output reg q);
    reg [15:0] sr;
    reg e_r;
    always @(posedge clk) begin
        sr <= {sr[14:0], d};
        e_r <= e;
        q <= sr[15] & e_r;
    end
endmodule
""",
    # register -> LUT -> DSP48E2 -> LUT -> register, the DSP with all its registers (R=1) or none
    "dsp": """
module dsp #(parameter integer R = 1) (input clk, input [15:0] a, input [15:0] b, input [15:0] c, output reg [15:0] y);
    reg [15:0] ra, rb, rc;
    wire [47:0] p;
    always @(posedge clk) begin
        ra <= a;
        rb <= b;
        rc <= c;
        y <= p[15:0] ^ rc;
    end
    DSP48E2 #(.AREG(R), .BREG(R), .ACASCREG(R), .BCASCREG(R), .MREG(R), .PREG(R), .CREG(0), .DREG(0), .ADREG(0),
              .INMODEREG(0), .OPMODEREG(0), .ALUMODEREG(0), .CARRYINREG(0), .CARRYINSELREG(0))
        u_dsp (.CLK(clk), .A({14'b0, ra ^ rc}), .B({2'b0, rb}), .C(48'b0), .D(27'b0), .OPMODE(9'b000000101),
               .ALUMODE(4'b0), .INMODE(5'b0), .CARRYIN(1'b0), .CARRYINSEL(3'b0),
               .CEA1(1'b1), .CEA2(1'b1), .CEB1(1'b1), .CEB2(1'b1), .CEM(1'b1), .CEP(1'b1), .P(p));
endmodule
""",
}
# netlist name -> (module, parameter overrides)
NETLISTS = {name: (name, "") for name in MODULES} | {"dsp_registered": ("dsp", ""), "dsp_unregistered": ("dsp", "R=0")}


@pytest.fixture(scope="module")
def netlists(tmp_path_factory) -> dict[str, Path]:
    """Every module of MODULES synthesized like `fpgagen synth` does, in one Yosys run."""
    folder = tmp_path_factory.mktemp("timing")
    script = []
    for netlist, (module, overrides) in NETLISTS.items():
        (folder / f"{module}.v").write_text(MODULES[module])
        script.append(f"design -reset; read_verilog -sv {module}.v")
        if overrides:
            name, value = overrides.split("=")
            script.append(f"chparam -set {name} {value} {module}")
        script.append(f"synth_xilinx -family xcup -flatten -top {module}; write_json -selected {netlist}.json")
    done = subprocess.run(
        [*yosys_command(), "-q", "-p", "; ".join(script)], cwd=folder, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return {netlist: folder / f"{netlist}.json" for netlist in NETLISTS}


def cell_types(path: Path) -> set[str]:
    module = next(iter(read_netlist(path)["modules"].values()))
    return {cell["type"] for cell in module["cells"].values()}


def test_each_lut_is_one_level_and_the_path_names_them(netlists):
    depth = logic_depth(read_netlist(netlists["lut_chain"]))
    assert depth.levels == 3
    assert [(p.type, p.cell, p.levels) for p in depth.path[1:-1]] == [("LUT6", f"u_l{i}", 1) for i in (1, 2, 3)]
    assert depth.start.type == "FDRE" and re.fullmatch(r"r\[[0-5]\]", depth.start.cell)
    assert "lut_chain.v:5" in depth.start.source  # the always block that makes the register
    assert depth.end.type == "FDRE" and depth.end.pin == "D"
    assert depth.histogram == {0: 17, 3: 1}  # 16 input registers from the ports, 1 at the end of the chain


def test_an_adder_is_one_lut_level_and_its_carry_chain_is_reported(netlists):
    depth = logic_depth(read_netlist(netlists["adder"]))
    assert depth.levels == 1  # the propagate LUT; the carry cells count no level
    # 16 bits: four CARRY4 (Yosys 0.70 maps adders to CARRY4 even for xcup), from bit 0 to bit 15
    assert (depth.carry_chain.cells, depth.carry_chain.bits, depth.carry_chain.type) == (4, 16, "CARRY4")
    assert [p.type for p in depth.path] == ["FDRE", "LUT2", "CARRY4", "CARRY4", "CARRY4", "CARRY4", "FDRE"]


def test_a_lut_ram_read_is_one_level(netlists):
    depth = logic_depth(read_netlist(netlists["lutram"]))
    assert depth.levels == 1
    assert [p.type for p in depth.path] == ["FDRE", "RAM64M8", "FDRE"]
    assert depth.path[1].pin.startswith("DO") and depth.path[1].levels == 1
    assert depth.start.cell.startswith("ra_r[")  # from the read address register, not the write


def test_a_shift_register_read_at_a_constant_address_starts_a_path(netlists):
    assert "SRL16E" in cell_types(netlists["shift"])
    depth = logic_depth(read_netlist(netlists["shift"]))
    assert depth.levels == 1  # the AND; the SRL's output counts as a register's (else 2)


def test_a_dsp_with_its_registers_is_a_path_boundary(netlists):
    depth = logic_depth(read_netlist(netlists["dsp_registered"]))
    assert depth.levels == 1 and depth.dsp_crossings == 0
    assert depth.histogram[1] == 32  # A's 16 XOR bits end at the DSP, P's 16 start from it


def test_an_unregistered_dsp_counts_as_dsp_levels(netlists):
    depth = logic_depth(read_netlist(netlists["dsp_unregistered"]))
    assert depth.levels == 1 + DSP_LEVELS + 1 and depth.dsp_crossings == 1
    assert [(p.type, p.levels) for p in depth.path] == [
        ("FDRE", 0), ("LUT2", 1), ("DSP48E2", DSP_LEVELS), ("LUT2", 1), ("FDRE", 0)
    ]  # fmt: skip
    assert depth.path[2].cell == "u_dsp" and "dsp.v:13" in depth.path[2].source


# -- hand-built netlists: what Yosys does not produce --------------------------------------------------------

ONE = "00000000000000000000000000000001"


def netlist(cells: dict) -> dict:
    return {"modules": {"top": {"attributes": {"top": ONE}, "ports": {}, "cells": cells, "netnames": {}}}}


def flop(d: int, q: int) -> dict:
    directions = {"C": "input", "CE": "input", "R": "input", "D": "input", "Q": "output"}
    return {"type": "FDRE", "port_directions": directions, "connections": {"C": [1], "CE": ["1"], "R": ["0"], "D": [d], "Q": [q]}}  # fmt: skip


def lut(inputs: list[int], output: int) -> dict:
    directions = {f"I{i}": "input" for i in range(len(inputs))} | {"O": "output"}
    connections = {f"I{i}": [bit] for i, bit in enumerate(inputs)} | {"O": [output]}
    return {"type": f"LUT{len(inputs)}", "port_directions": directions, "connections": connections}


def carry8(s: list, o: list, carry_type: str) -> dict:
    ports = {"CI": "input", "CI_TOP": "input", "S": "input", "DI": "input", "O": "output", "CO": "output"}
    connections = {"CI": ["0"], "CI_TOP": ["0"], "S": s, "DI": ["0"] * 8, "O": o, "CO": ["x"] * 8}
    return {"type": "CARRY8", "parameters": {"CARRY_TYPE": carry_type}, "port_directions": ports, "connections": connections}  # fmt: skip


def test_a_combinational_loop_is_an_error_naming_its_cells():
    cells = {"q": flop(3, 2), "$abc$1": lut([2, 4], 3), "$abc$2": lut([3], 4)}
    with pytest.raises(CombinationalLoop, match="combinational loop through 2 cells: ") as error:
        logic_depth(netlist(cells))
    assert "$abc$1 (LUT2)" in str(error.value) and "$abc$2 (LUT1)" in str(error.value)


def test_a_cell_the_rules_do_not_cover_is_an_error():
    cells = {"q": flop(3, 2), "u_x": {"type": "GTYE4_CHANNEL", "port_directions": {}, "connections": {}}}
    with pytest.raises(TimingError, match="u_x has type GTYE4_CHANNEL"):
        logic_depth(netlist(cells))


@pytest.mark.parametrize("carry_type, bits", [("SINGLE_CY8", 8), ("DUAL_CY4", 4)])
def test_a_carry8_chain_follows_its_carry_type(carry_type, bits):
    """Register -> S[0] or S[4] of a CARRY8 -> O[7] -> register: in DUAL_CY4 mode bit 7's carry
    restarts at bit 4, so S[0] does not reach O[7]."""
    sums = [10, "0", "0", "0", 11, "0", "0", "0"]
    cells = {"a": flop(1, 10), "b": flop(1, 11), "c": carry8(sums, ["x"] * 7 + [12], carry_type), "y": flop(12, 13)}
    depth = logic_depth(netlist(cells))
    assert depth.levels == 0 and depth.carry_chain.bits == bits and depth.carry_chain.cells == 1
    assert depth.start.cell == ("a" if bits == 8 else "b")


# -- a design fpgagen compiles, through `fpgagen synth` ----------------------------------------------------


def test_synth_reports_the_worst_path_of_a_design_with_its_source_lines(tmp_path, run_cli):
    outdir = mlp_design("small_dataflow", tmp_path / "design", count=2)
    result = run_cli("synth", outdir)
    assert result.exit_code == 0, result.stderr
    depth = json.loads((outdir / "synth_results.json").read_text())["logic_levels"]
    assert f"Logic depth: {depth['levels']} LUT levels" in result.stdout
    rtl = outdir / "rtl"
    assert not (rtl / "synth_netlist.json").exists() and not (rtl / "synth_stat.json").exists()

    assert sum(step["levels"] for step in depth["path"]) == depth["levels"] > 0
    assert max(int(levels) for levels in depth["histogram"]) == depth["levels"]
    assert sum(depth["histogram"].values()) == depth["endpoints"]
    verilog = "\n".join(path.read_text() for path in rtl.glob("*.v"))
    for point in (depth["start"], depth["end"]):
        # A register is named by the signal it holds, declared at one of the reported lines, in
        # instances the design's Verilog has.
        *instances, signal = re.sub(r"\[\d+\]$", "", point["cell"]).split(".")
        lines = [(rtl / file).read_text().splitlines()[int(line) - 1] for file, line in
                 (source.split(":") for source in point["source"])]  # fmt: skip
        assert any(re.search(rf"\b{re.escape(signal)}\b", line) for line in lines), (point, lines)
        for instance in instances:
            assert re.search(rf"\b{re.escape(instance.split('[')[0])}\b", verilog), instance
