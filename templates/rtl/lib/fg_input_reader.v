// Input reader: AXI4-Stream beats of K 16-bit values become a channel of K lanes of nonzero
// activations (value k of beat t is activation t*K + k, on lane k), written through a lane writer.
module fg_input_reader #(
    parameter integer K = 1,
    parameter integer N_IN = 1,
    parameter integer IDX_W = 1
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  enable,        // more vectors are expected
    input  wire [VALUE_W*K-1:0]  s_tdata,
    input  wire                  s_tvalid,
    output wire                  s_tready,
    output wire [K*ITEM_W-1:0]   lane_data,
    output wire [K-1:0]          lane_valid,
    input  wire [K-1:0]          lane_ready,
    output wire [K-1:0]          mask_data,
    output wire                  mask_valid,
    input  wire                  mask_ready,
    output wire                  vector_read    // pulse: a whole vector has been written
);
    localparam integer VALUE_W = 16;  // activations travel as 16-bit values (docs/engine.md)
    localparam integer ITEM_W = 1 + IDX_W + VALUE_W;  // {last, index, value}
    localparam integer BEATS = (N_IN + K - 1) / K;
    localparam integer KB = (K > 1) ? $clog2(K) : 0;
    localparam [31:0] LAST_BEAT = BEATS - 1;
    localparam [31:0] N_IN32 = N_IN;

    reg [31:0] t;
    reg closing;
    wire [K-1:0] new_valid;
    wire [K*(IDX_W+VALUE_W)-1:0] new_item;
    /* verilator lint_off UNUSEDSIGNAL */
    wire step_ready;  // implied: a beat is taken only when every lane has room
    /* verilator lint_on UNUSEDSIGNAL */

    // Ready whenever every lane has room, so that TREADY never depends on TDATA.
    assign s_tready = enable && !closing && (&lane_ready);
    wire beat = s_tvalid && s_tready;

    genvar g;
    generate
        for (g = 0; g < K; g = g + 1) begin : g_lane
            wire [VALUE_W-1:0] value = s_tdata[VALUE_W*g +: VALUE_W];
            wire [31:0] index = (t << KB) | g;
            assign new_valid[g] = (value != {VALUE_W{1'b0}}) && (index < N_IN32);
            assign new_item[g*(IDX_W+VALUE_W) +: IDX_W+VALUE_W] = {index[IDX_W-1:0], value};
        end
    endgenerate

    fg_lane_writer #(.LANES(K), .IDX_W(IDX_W)) u_writer (
        .clk(clk), .rst(rst),
        .new_valid(new_valid), .new_item(new_item), .step(beat), .step_ready(step_ready),
        .finish(closing), .finished(vector_read),
        .lane_data(lane_data), .lane_valid(lane_valid), .lane_ready(lane_ready),
        .mask_data(mask_data), .mask_valid(mask_valid), .mask_ready(mask_ready)
    );

    always @(posedge clk) begin
        if (rst) begin
            t <= 32'd0;
            closing <= 1'b0;
        end else if (closing) begin
            if (vector_read) closing <= 1'b0;
        end else if (beat) begin
            if (t == LAST_BEAT) begin
                t <= 32'd0;
                closing <= 1'b1;
            end else begin
                t <= t + 32'd1;
            end
        end
    end
endmodule
