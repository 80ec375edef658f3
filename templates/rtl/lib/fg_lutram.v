// Simple dual-port LUT RAM: one write port, one read port that reads without a clock (a LUT RAM's
// read is a LUT's multiplexer), so a read-modify-write takes one cycle (fg_pe.v).
module fg_lutram #(
    parameter integer WIDTH = 8,
    parameter integer DEPTH = 1
) (
    input  wire             clk,
    input  wire             we,
    input  wire [AW-1:0]    waddr,
    input  wire [WIDTH-1:0] wdata,
    input  wire [AW-1:0]    raddr,
    output wire [WIDTH-1:0] rdata
);
    localparam integer AW = (DEPTH > 1) ? $clog2(DEPTH) : 1;

    (* ram_style = "distributed" *) reg [WIDTH-1:0] mem [0:DEPTH-1];

    always @(posedge clk) begin
        if (we) mem[waddr] <= wdata;
    end
    assign rdata = mem[raddr];
endmodule
