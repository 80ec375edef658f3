// Read-only memory with a registered read, initialized from a $readmemh file, in the kind of
// block the engine plan chose (STYLE: "block", "distributed").
module fg_rom #(
    parameter integer WIDTH = 8,
    parameter integer DEPTH = 1,
    /* verilator lint_off UNUSEDPARAM */
    parameter STYLE = "block",  // read by synthesis, through the attribute below
    /* verilator lint_on UNUSEDPARAM */
    parameter INIT = ""  // a $readmemh file; every instance names one
) (
    input  wire                 clk,
    input  wire                 en,
    input  wire [AW-1:0]        addr,
    output reg  [WIDTH-1:0]     data
);
    localparam integer AW = (DEPTH > 1) ? $clog2(DEPTH) : 1;

    (* rom_style = STYLE *) reg [WIDTH-1:0] mem [0:DEPTH-1];
    generate
        if (INIT != "") begin : g_init
            initial $readmemh(INIT, mem);
        end
    endgenerate

    always @(posedge clk) begin
        if (en) data <= mem[addr];
    end
endmodule
