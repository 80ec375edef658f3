// Read-only memory with up to two read ports and two register stages on each read: data comes two
// cycles after its address. Initialized from a $readmemh file, in the kind of block the engine
// plan chose (STYLE: "block", "distributed"). A block RAM registers the address and its output
// (so the read leaves the block early in the cycle). A ROM in LUTs registers the address, then
// the word it reads: with the word's register first and a second behind it, Yosys shared the
// address decoding among a wide ROM's bits in a chain of LUT2s, 7 LUT levels from the address
// to the word (a stage's 13 bias rows of 16 x 34 bits); from an address register of its own, 5.
// It also keeps an address of flip-flops instead of a word.
module fg_rom #(
    parameter integer WIDTH = 8,
    parameter integer DEPTH = 1,
    parameter integer PORTS = 1,
    parameter STYLE = "block",  // also read by synthesis, through the attribute below
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

    reg [PORTS-1:0] read_en;
    genvar p;
    generate
        if (STYLE == "block") begin : g_block
            reg [PORTS*WIDTH-1:0] read;
            for (p = 0; p < PORTS; p = p + 1) begin : g_port
                always @(posedge clk) begin
                    read_en[p] <= en[p];
                    if (en[p]) read[p*WIDTH +: WIDTH] <= mem[addr[p*AW +: AW]];
                    if (read_en[p]) data[p*WIDTH +: WIDTH] <= read[p*WIDTH +: WIDTH];
                end
            end
        end else begin : g_logic
            reg [PORTS*AW-1:0] read_addr;
            for (p = 0; p < PORTS; p = p + 1) begin : g_port
                always @(posedge clk) begin
                    read_en[p] <= en[p];
                    if (en[p]) read_addr[p*AW +: AW] <= addr[p*AW +: AW];
                    if (read_en[p]) data[p*WIDTH +: WIDTH] <= mem[read_addr[p*AW +: AW]];
                end
            end
        end
    endgenerate
endmodule
