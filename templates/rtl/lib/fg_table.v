// A table the load phase fills (docs/engine.md, "Load phase"): one write port, and one read port
// with two register stages like fg_rom's, so data comes two cycles after its address. In the kind
// of block the engine plan chose (STYLE: "ultra", "block", "distributed"); UltraRAM cannot be
// initialized by the bitstream, so nothing here is.
module fg_table #(
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
    input  wire             en,
    input  wire [AW-1:0]    addr,
    output reg  [WIDTH-1:0] data
);
    localparam integer AW = (DEPTH > 1) ? $clog2(DEPTH) : 1;

    (* ram_style = STYLE *) reg [WIDTH-1:0] mem [0:DEPTH-1];
    reg [WIDTH-1:0] read;
    reg read_en;
    always @(posedge clk) begin
        if (we) mem[waddr] <= wdata;
        read_en <= en;
        if (en) read <= mem[addr];
        if (read_en) data <= read;
    end
endmodule
