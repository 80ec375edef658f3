// Read-only memory with up to two read ports and two register stages on each read (the block
// RAM's output register, so the read leaves the block early in the cycle): data comes two
// cycles after its address. Initialized from a $readmemh file, in the kind of block the engine
// plan chose (STYLE: "block", "distributed").
module fg_rom #(
    parameter integer WIDTH = 8,
    parameter integer DEPTH = 1,
    parameter integer PORTS = 1,
    /* verilator lint_off UNUSEDPARAM */
    parameter STYLE = "block",  // read by synthesis, through the attribute below
    /* verilator lint_on UNUSEDPARAM */
    parameter INIT = ""  // a $readmemh file; every instance names one
) (
    input  wire                     clk,
    input  wire [PORTS-1:0]         en,
    input  wire [PORTS*AW-1:0]      addr,
    output reg  [PORTS*WIDTH-1:0]   data
);
    localparam integer AW = (DEPTH > 1) ? $clog2(DEPTH) : 1;

    (* rom_style = STYLE *) reg [WIDTH-1:0] mem [0:DEPTH-1];
    generate
        if (INIT != "") begin : g_init
            initial $readmemh(INIT, mem);
        end
    endgenerate

    reg [PORTS*WIDTH-1:0] read;
    reg [PORTS-1:0] read_en;
    genvar p;
    generate
        for (p = 0; p < PORTS; p = p + 1) begin : g_port
            always @(posedge clk) begin
                read_en[p] <= en[p];
                if (en[p]) read[p*WIDTH +: WIDTH] <= mem[addr[p*AW +: AW]];
                if (read_en[p]) data[p*WIDTH +: WIDTH] <= read[p*WIDTH +: WIDTH];
            end
        end
    endgenerate
endmodule
