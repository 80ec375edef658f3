// Synchronous FIFO with first-word fall-through: out_data is valid whenever out_valid is high.
// DEPTH entries live in a RAM with a registered read, in the kind of block the engine plan chose
// (STYLE: "block", "distributed", "registers"), plus the output register.
//
// `room` is registered: high when at least SLACK entries are free. A writer that checks `room`
// and writes at most SLACK entries before it sees the flag again never finds the FIFO full, so
// no ready signal has to travel back through its pipeline (docs/engine.md, "Timing").
module fg_fifo #(
    parameter integer WIDTH = 8,
    parameter integer DEPTH = 16,
    parameter integer SLACK = 1,
    /* verilator lint_off UNUSEDPARAM */
    parameter STYLE = "distributed"  // read by synthesis, through the attribute below
    /* verilator lint_on UNUSEDPARAM */
) (
    input  wire             clk,
    input  wire             rst,
    input  wire [WIDTH-1:0] in_data,
    input  wire             in_valid,
    output wire             in_ready,
    output reg              room,
    output reg  [WIDTH-1:0] out_data,
    output reg              out_valid,
    input  wire             out_ready
);
    localparam integer AW = (DEPTH > 1) ? $clog2(DEPTH) : 1;
    localparam [31:0] LAST32 = DEPTH - 1;
    localparam [31:0] FULL32 = DEPTH;
    localparam [31:0] ROOMY32 = DEPTH - SLACK;
    localparam [AW-1:0] LAST = LAST32[AW-1:0];
    localparam [AW:0] FULL = FULL32[AW:0];
    localparam [AW:0] ROOMY = ROOMY32[AW:0];  // at most this many stored: SLACK free

    (* ram_style = STYLE *) reg [WIDTH-1:0] mem [0:DEPTH-1];
    reg [AW-1:0] wr_ptr;
    reg [AW-1:0] rd_ptr;
    reg [AW:0] stored;  // entries in mem, not counting out_data

    wire push = in_valid && in_ready;
    wire pop = (stored != 0) && (!out_valid || out_ready);
    wire [AW:0] stored_next = stored + {{AW{1'b0}}, push} - {{AW{1'b0}}, pop};
    assign in_ready = (stored != FULL);

    always @(posedge clk) begin
        if (push) mem[wr_ptr] <= in_data;
        if (pop) out_data <= mem[rd_ptr];
    end

    always @(posedge clk) begin
        if (rst) begin
            wr_ptr <= 0;
            rd_ptr <= 0;
            stored <= 0;
            out_valid <= 1'b0;
            room <= 1'b0;
        end else begin
            if (push) wr_ptr <= (wr_ptr == LAST) ? {AW{1'b0}} : wr_ptr + 1'b1;
            if (pop) rd_ptr <= (rd_ptr == LAST) ? {AW{1'b0}} : rd_ptr + 1'b1;
            stored <= stored_next;
            if (pop) out_valid <= 1'b1;
            else if (out_ready) out_valid <= 1'b0;
            room <= (stored + {{AW{1'b0}}, push} <= ROOMY);  // a pop is seen a cycle late: the flag never lies, and no path runs from out_ready
        end
    end
endmodule
