// A table the load phase fills (docs/engine.md, "Load phase"): an fg_ram (one write port, a
// registered read, in the kind of block the engine plan chose: "ultra", "block", "distributed")
// with a second register on its read, like fg_rom's two, so data comes two cycles after its
// address. UltraRAM cannot be initialized by the bitstream, so nothing here is.
module fg_table #(
    parameter integer WIDTH = 8,
    parameter integer DEPTH = 1,
    parameter STYLE = "block"
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

    wire [WIDTH-1:0] read;
    fg_ram #(.WIDTH(WIDTH), .DEPTH(DEPTH), .STYLE(STYLE)) u_ram (
        .clk(clk), .we(we), .waddr(waddr), .wdata(wdata), .re(en), .raddr(addr), .rdata(read)
    );
    reg read_en;
    always @(posedge clk) begin
        read_en <= en;
        if (read_en) data <= read;
    end
endmodule
