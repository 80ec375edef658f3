// Reads one activation vector from a channel of LANES lane FIFOs: lane 0 up to its end marker, then
// lane 1, and so on. Items are {last, index, value}; end markers of all lanes but the final one are
// dropped (one cycle each), the final one leaves as an item with eov set.
module fg_lane_reader #(
    parameter integer LANES = 1,
    parameter integer IDX_W = 1
) (
    input  wire                      clk,
    input  wire                      rst,
    input  wire [LANES*ITEM_W-1:0]   lane_data,
    input  wire [LANES-1:0]          lane_valid,
    output wire [LANES-1:0]          lane_ready,
    output wire [IDX_W-1:0]          out_idx,
    output wire [15:0]               out_val,
    output wire                      out_eov,
    output wire                      out_valid,
    input  wire                      out_ready
);
    localparam integer ITEM_W = 17 + IDX_W;
    localparam integer LB = (LANES > 1) ? $clog2(LANES) : 1;
    localparam [31:0] FINAL32 = LANES - 1;

    reg [LB-1:0] cur;
    wire [ITEM_W-1:0] item = lane_data[cur*ITEM_W +: ITEM_W];
    wire last = item[ITEM_W-1];
    wire final_lane = (cur == FINAL32[LB-1:0]);
    wire take = lane_valid[cur] && ((last && !final_lane) || out_ready);

    assign out_valid = lane_valid[cur] && (!last || final_lane);
    assign out_eov = last;
    assign out_idx = item[16 +: IDX_W];
    assign out_val = item[15:0];

    genvar g;
    generate
        for (g = 0; g < LANES; g = g + 1) begin : g_ready
            assign lane_ready[g] = take && (cur == g);
        end
    endgenerate

    always @(posedge clk) begin
        if (rst) cur <= {LB{1'b0}};
        else if (take && last) cur <= final_lane ? {LB{1'b0}} : cur + 1'b1;
    end
endmodule
