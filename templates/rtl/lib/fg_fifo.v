// Synchronous FIFO with first-word fall-through: out_data is valid whenever out_valid is high.
// DEPTH entries live in a RAM with a registered read, in the kind of block the engine plan chose
// (STYLE: "block", "distributed", "registers"), plus the output register.
//
// `room` is registered: high when at least SLACK entries are free. A writer that checks `room`
// and writes at most SLACK entries before it sees the flag again never finds the FIFO full, so
// no ready signal has to travel back through its pipeline (docs/engine.md, "Timing"). The flags
// (`room`, not empty, not full) are registers too, so a pop or a push reaches them through a LUT
// or two, not through the count's adder.
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
    localparam [31:0] ROOMY32 = DEPTH - SLACK;  // at most this many stored: SLACK free
    localparam [AW-1:0] LAST = LAST32[AW-1:0];

    (* ram_style = STYLE *) reg [WIDTH-1:0] mem [0:DEPTH-1];
    reg [AW-1:0] wr_ptr;
    reg [AW-1:0] rd_ptr;
    reg [AW:0] stored;  // entries in mem, not counting out_data
    reg stored_any;     // stored != 0
    reg not_full;       // stored != DEPTH

    wire push = in_valid && not_full;
    wire pop = stored_any && (!out_valid || out_ready);
    assign in_ready = not_full;

    // The flags of the next count come from comparisons of this one with constants, chosen by
    // whether the count grows or shrinks: no adder between a push or a pop and the flags (timing).
    wire grows = push && !pop;
    wire shrinks = pop && !push;
    wire [31:0] stored32 = {{(31 - AW){1'b0}}, stored};

    always @(posedge clk) begin
        if (push) mem[wr_ptr] <= in_data;
        if (pop) out_data <= mem[rd_ptr];
    end

    always @(posedge clk) begin
        if (rst) begin
            wr_ptr <= 0;
            rd_ptr <= 0;
            stored <= 0;
            stored_any <= 1'b0;
            not_full <= 1'b1;
            out_valid <= 1'b0;
            room <= 1'b0;
        end else begin
            if (push) wr_ptr <= (wr_ptr == LAST) ? {AW{1'b0}} : wr_ptr + 1'b1;
            if (pop) rd_ptr <= (rd_ptr == LAST) ? {AW{1'b0}} : rd_ptr + 1'b1;
            stored <= stored + {{AW{1'b0}}, push} - {{AW{1'b0}}, pop};
            if (grows) stored_any <= 1'b1;
            else if (shrinks) stored_any <= stored32 > 32'd1;
            if (shrinks) not_full <= 1'b1;
            else if (grows) not_full <= stored32 != FULL32 - 32'd1;
            if (pop) out_valid <= 1'b1;
            else if (out_ready) out_valid <= 1'b0;
            // at most ROOMY stored next cycle
            room <= grows ? stored32 < ROOMY32 : shrinks ? stored32 <= ROOMY32 + 32'd1 : stored32 <= ROOMY32;
        end
    end
endmodule
