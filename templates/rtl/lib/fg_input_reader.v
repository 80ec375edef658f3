// Input reader: AXI4-Stream beats of K 16-bit values become K lanes of nonzero activations
// (value k of beat t is activation t*K + k, on lane k), each vector closed by end markers.
module fg_input_reader #(
    parameter integer K = 1,
    parameter integer N_IN = 1,
    parameter integer IDX_W = 1
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  enable,        // more vectors are expected
    input  wire [16*K-1:0]       s_tdata,
    input  wire                  s_tvalid,
    output wire                  s_tready,
    output wire [K*ITEM_W-1:0]   lane_data,
    output wire [K-1:0]          lane_valid,
    input  wire [K-1:0]          lane_ready,
    output reg                   vector_read    // pulse: a whole vector has been read
);
    localparam integer ITEM_W = 17 + IDX_W;
    localparam integer BEATS = (N_IN + K - 1) / K;
    localparam integer KB = (K > 1) ? $clog2(K) : 0;
    localparam [31:0] LAST_BEAT = BEATS - 1;
    localparam [31:0] N_IN32 = N_IN;

    reg [31:0] t;
    reg markers;
    reg [K-1:0] sent;

    assign s_tready = enable && !markers && (&lane_ready);
    wire beat = s_tvalid && s_tready;

    genvar g;
    generate
        for (g = 0; g < K; g = g + 1) begin : g_lane
            wire [15:0] value = s_tdata[16*g +: 16];
            wire [31:0] index = (t << KB) | g;
            wire wanted = (value != 16'd0) && (index < N_IN32);
            assign lane_valid[g] = markers ? !sent[g] : (beat && wanted);
            assign lane_data[g*ITEM_W +: ITEM_W] = markers ? {1'b1, {(ITEM_W-1){1'b0}}}
                                                 : {1'b0, index[IDX_W-1:0], value};
        end
    endgenerate

    always @(posedge clk) begin
        vector_read <= 1'b0;
        if (rst) begin
            t <= 32'd0;
            markers <= 1'b0;
            sent <= {K{1'b0}};
        end else if (markers) begin
            sent <= sent | (lane_valid & lane_ready);
            if ((sent | (lane_valid & lane_ready)) == {K{1'b1}}) begin
                markers <= 1'b0;
                sent <= {K{1'b0}};
                vector_read <= 1'b1;
            end
        end else if (beat) begin
            if (t == LAST_BEAT) begin
                t <= 32'd0;
                markers <= 1'b1;
            end else begin
                t <= t + 32'd1;
            end
        end
    end
endmodule
