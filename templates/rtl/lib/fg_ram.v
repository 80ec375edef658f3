// Simple dual-port RAM (one write port, one registered read port, read-first), in the kind of
// block the engine plan chose (STYLE: "block", "distributed", "registers"). Its users clear it
// (the PEs after reset) and add the output register where they read it.
module fg_ram #(
    parameter integer WIDTH = 8,
    parameter integer DEPTH = 1,
    /* verilator lint_off UNUSEDPARAM */
    parameter STYLE = "block"  // read by synthesis, through the attribute below
    /* verilator lint_on UNUSEDPARAM */
) (
    input  wire             clk,
    input  wire             we,
    input  wire [AW-1:0]    waddr,
    input  wire [WIDTH-1:0] wdata,
    input  wire             re,
    input  wire [AW-1:0]    raddr,
    output reg  [WIDTH-1:0] rdata
);
    localparam integer AW = (DEPTH > 1) ? $clog2(DEPTH) : 1;

    (* ram_style = STYLE *) reg [WIDTH-1:0] mem [0:DEPTH-1];

    always @(posedge clk) begin
        if (we) mem[waddr] <= wdata;
        if (re) rdata <= mem[raddr];
    end
endmodule
