// A dataflow stage: one layer on its own P PEs, weights in on-chip ROM (docs/engine.md).
//
// Front end: lane reader -> S1 (row table read) -> S2 (issues the row's beats from the weight ROM,
// one per cycle; a row without beats, or the end of the vector, takes one cycle) -> PE array.
module fg_df_stage #(
    parameter integer B = 1,            // lanes of the input channel
    parameter integer P = 1,
    parameter integer IN_IDX_W = 8,     // index width of the input channel's items
    parameter integer OUT_IDX_W = 8,    // ... and of the output channel's
    parameter integer N_IN = 1,
    parameter integer N_OUT = 1,
    parameter integer ADDRESSES = 1,    // local addresses of a PE: ceil(N_OUT / P)
    parameter integer LOCAL_W = 1,      // the slot's local address field
    parameter integer BEATS = 1,        // weight ROM depth
    parameter integer START_W = 1,
    parameter integer CNT_W = 1,
    parameter integer W_BITS = 8,
    parameter integer ACC_W = 32,
    parameter integer SHIFT = 0,
    parameter integer LO = -32768,
    parameter integer HI = 32767,
    parameter integer DENSE = 0,        // the model's last layer: dense beats out
    parameter ROWS_FILE = "",
    parameter ENTRIES_FILE = "",
    parameter BIAS_FILE = "",
    parameter ROWS_STYLE = "block",     // memory kinds, as the engine plan chose them
    parameter WEIGHTS_STYLE = "block",
    parameter BIAS_STYLE = "block",
    parameter ACC_STYLE = "block"
) (
    input  wire                     clk,
    input  wire                     rst,
    input  wire [B*IN_ITEM_W-1:0]   in_data,
    input  wire [B-1:0]             in_valid,
    output wire [B-1:0]             in_ready,
    input  wire [B-1:0]             in_mask,
    input  wire                     in_mask_valid,
    output wire                     in_mask_ready,
    output wire [P*OUT_ITEM_W-1:0]  out_data,
    output wire [P-1:0]             out_valid,
    input  wire [P-1:0]             out_ready,
    output wire [P-1:0]             out_mask,
    output wire                     out_mask_valid,
    input  wire                     out_mask_ready,
    output wire [P*VALUE_W-1:0]     dense_data,
    output wire                     dense_last,
    output wire                     dense_valid,
    input  wire                     dense_ready,
    output reg  [31:0]              perf_busy,     // compute cycles, waits for a free bank excluded
    output reg  [31:0]              perf_drain,    // drain cycles, waits for output space excluded
    output reg  [31:0]              perf_vectors
);
    localparam integer VALUE_W = 16;  // activations travel as 16-bit values (docs/engine.md)
    localparam integer IN_ITEM_W = 1 + IN_IDX_W + VALUE_W;  // {last, index, value}
    localparam integer OUT_ITEM_W = 1 + OUT_IDX_W + VALUE_W;
    localparam integer SLOT_W = 1 + LOCAL_W + W_BITS;  // {valid, local, weight}
    localparam integer ROW_AW = (N_IN > 1) ? $clog2(N_IN) : 1;
    localparam integer BEAT_AW = (BEATS > 1) ? $clog2(BEATS) : 1;
    localparam [31:0] SHIFT32 = SHIFT;
    localparam [31:0] LO32 = LO;
    localparam [31:0] HI32 = HI;
    localparam [31:0] N_OUT32 = N_OUT;
    localparam [31:0] ADDRESSES32 = ADDRESSES;

    // ---- lane reader -> S1 -----------------------------------------------------------------------
    wire [IN_IDX_W-1:0] r_idx;
    wire [VALUE_W-1:0] r_val;
    wire r_eov;
    wire r_valid;
    wire r_started;
    reg s1_valid;
    reg s1_eov;
    reg [VALUE_W-1:0] s1_x;
    wire s2_take;
    wire s1_load = r_valid && (!s1_valid || s2_take);

    fg_lane_reader #(.LANES(B), .IDX_W(IN_IDX_W)) u_reader (
        .clk(clk), .rst(rst),
        .lane_data(in_data), .lane_valid(in_valid), .lane_ready(in_ready),
        .mask(in_mask), .mask_valid(in_mask_valid), .mask_ready(in_mask_ready),
        .out_idx(r_idx), .out_val(r_val), .out_eov(r_eov), .out_valid(r_valid), .out_ready(s1_load),
        .started(r_started)
    );

    wire [START_W+CNT_W-1:0] row;
    fg_rom #(.WIDTH(START_W + CNT_W), .DEPTH(N_IN), .STYLE(ROWS_STYLE), .INIT(ROWS_FILE)) u_rows (
        .clk(clk), .en(s1_load), .addr(r_idx[ROW_AW-1:0]), .data(row)
    );

    always @(posedge clk) begin
        if (rst) s1_valid <= 1'b0;
        else if (s1_load) s1_valid <= 1'b1;
        else if (s2_take) s1_valid <= 1'b0;
        if (s1_load) begin
            s1_eov <= r_eov;
            s1_x <= r_val;
        end
    end

    // ---- S2: beat issue ----------------------------------------------------------------------------
    wire issue_ok;
    wire issue_bank;
    reg [START_W-1:0] cur;
    reg [CNT_W-1:0] rem;
    reg [VALUE_W-1:0] x2;
    reg bank2;
    wire beat = (rem != {CNT_W{1'b0}});
    wire s2_free = (rem >> 1) == {CNT_W{1'b0}};  // at most the last beat left
    assign s2_take = s1_valid && s2_free && issue_ok;
    wire eov_issue = s2_take && s1_eov;

    always @(posedge clk) begin
        if (rst) begin
            rem <= {CNT_W{1'b0}};
        end else if (s2_take && !s1_eov) begin
            cur <= row[CNT_W +: START_W];
            rem <= row[CNT_W-1:0];
            x2 <= s1_x;
            bank2 <= issue_bank;
        end else if (beat) begin
            cur <= cur + 1'b1;
            rem <= rem - 1'b1;
        end
    end

    wire [P*SLOT_W-1:0] entries;
    fg_rom #(.WIDTH(P * SLOT_W), .DEPTH(BEATS), .STYLE(WEIGHTS_STYLE), .INIT(ENTRIES_FILE)) u_entries (
        .clk(clk), .en(beat), .addr(cur[BEAT_AW-1:0]), .data(entries)
    );

    reg m0_valid;
    reg m0_eov;
    reg m0_bank;
    reg [VALUE_W-1:0] m0_x;
    always @(posedge clk) begin
        if (rst) begin
            m0_valid <= 1'b0;
            m0_eov <= 1'b0;
        end else begin
            m0_valid <= beat;
            m0_eov <= eov_issue;
        end
        m0_x <= x2;
        m0_bank <= beat ? bank2 : issue_bank;
    end

    // ---- PEs -------------------------------------------------------------------------------------
    wire draining;
    wire drain_waiting;
    wire drain_done;
    fg_pe_array #(
        .P(P), .ADDRESSES(ADDRESSES), .LOCAL_W(LOCAL_W), .W_BITS(W_BITS), .ACC_W(ACC_W), .IDX_W(OUT_IDX_W),
        .BIAS_ROWS(ADDRESSES), .BIAS_FILE(BIAS_FILE), .BIAS_STYLE(BIAS_STYLE), .ACC_STYLE(ACC_STYLE)
    ) u_pes (
        .clk(clk), .rst(rst),
        .mac_valid(m0_valid), .mac_eov(m0_eov), .mac_bank(m0_bank), .mac_x(m0_x), .mac_entries(entries),
        .vector_issued(eov_issue), .issue_bank(issue_bank), .issue_ok(issue_ok),
        .cfg_shift(SHIFT32[5:0]), .cfg_lo(LO32[VALUE_W-1:0]), .cfg_hi(HI32[VALUE_W-1:0]),
        .cfg_n_out(N_OUT32), .cfg_addresses(ADDRESSES32), .cfg_bias_base({LOCAL_W{1'b0}}), .cfg_dense(DENSE != 0),
        .lane_data(out_data), .lane_valid(out_valid), .lane_ready(out_ready),
        .mask_data(out_mask), .mask_valid(out_mask_valid), .mask_ready(out_mask_ready),
        .dense_data(dense_data), .dense_last(dense_last), .dense_valid(dense_valid), .dense_ready(dense_ready),
        .draining(draining), .drain_waiting(drain_waiting), .drain_done(drain_done)
    );

    // ---- performance counters --------------------------------------------------------------------
    // A vector's compute runs from the load of its mask (the whole vector is there) to the issue of
    // its end. The cycles it waits for a bank that the drain has not emptied (the next stage is
    // slower) and the drain's cycles stalled on full outputs belong to the pipeline, not to this
    // layer: they are not counted.
    reg [1:0] in_flight;        // vectors whose mask is loaded and whose end is not issued yet
    wire bank_wait = s1_valid && s2_free && !issue_ok && !beat;
    always @(posedge clk) begin
        if (rst) begin
            in_flight <= 2'd0;
            perf_busy <= 32'd0;
            perf_drain <= 32'd0;
            perf_vectors <= 32'd0;
        end else begin
            in_flight <= in_flight + {1'b0, r_started} - {1'b0, eov_issue};
            if ((in_flight != 2'd0 || r_started) && !bank_wait) perf_busy <= perf_busy + 32'd1;
            if (draining && !drain_waiting) perf_drain <= perf_drain + 32'd1;
            if (drain_done) perf_vectors <= perf_vectors + 32'd1;
        end
    end
endmodule
