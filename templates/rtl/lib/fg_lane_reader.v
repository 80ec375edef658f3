// Reads activation vectors from a channel (docs/engine.md): a mask FIFO says which lanes hold
// items of the next vector; those lanes are read lowest first, each up to its `last` item, moving
// to the next nonempty lane in the same cycle; then one end-of-vector token. A vector of A items
// takes A + 1 cycles (the mask of the next vector loads with the end token).
module fg_lane_reader #(
    parameter integer LANES = 1,
    parameter integer IDX_W = 1
) (
    input  wire                      clk,
    input  wire                      rst,
    input  wire [LANES*ITEM_W-1:0]   lane_data,
    input  wire [LANES-1:0]          lane_valid,
    output wire [LANES-1:0]          lane_ready,
    input  wire [LANES-1:0]          mask,
    input  wire                      mask_valid,
    output wire                      mask_ready,
    output wire [IDX_W-1:0]          out_idx,
    output wire [VALUE_W-1:0]        out_val,
    output wire                      out_eov,       // the end-of-vector token (no activation)
    output wire                      out_valid,
    input  wire                      out_ready,
    output wire                      started        // a vector's mask has just been loaded
);
    localparam integer VALUE_W = 16;  // activations travel as 16-bit values (docs/engine.md)
    localparam integer ITEM_W = 1 + IDX_W + VALUE_W;  // {last, index, value}
    localparam integer LB = (LANES > 1) ? $clog2(LANES) : 1;

    reg active;              // a vector is being read
    reg [LANES-1:0] left;    // its lanes not yet read to the end

    // Lowest lane still to read.
    reg [LB-1:0] cur;
    integer k;
    always @(*) begin
        cur = {LB{1'b0}};
        for (k = LANES - 1; k >= 0; k = k - 1) begin
            if (left[k]) cur = k[LB-1:0];
        end
    end

    wire [ITEM_W-1:0] item = lane_data[cur*ITEM_W +: ITEM_W];
    wire reading = active && (left != {LANES{1'b0}});
    wire closing = active && (left == {LANES{1'b0}});
    wire take = reading && lane_valid[cur] && out_ready;
    wire load = mask_valid && (!active || (closing && out_ready));

    assign out_valid = reading ? lane_valid[cur] : closing;
    assign out_eov = closing;
    assign out_idx = item[VALUE_W +: IDX_W];
    assign out_val = item[VALUE_W-1:0];
    assign mask_ready = load;
    assign started = load;

    genvar g;
    generate
        for (g = 0; g < LANES; g = g + 1) begin : g_ready
            assign lane_ready[g] = take && (cur == g);
        end
    endgenerate

    always @(posedge clk) begin
        if (rst) begin
            active <= 1'b0;
            left <= {LANES{1'b0}};
        end else if (load) begin
            active <= 1'b1;
            left <= mask;
        end else if (closing && out_ready) begin
            active <= 1'b0;
        end else if (take && item[ITEM_W-1]) begin
            left[cur] <= 1'b0;
        end
    end
endmodule
