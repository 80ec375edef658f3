// A sequential stage: one shared engine of P PEs runs LAYERS consecutive layers, one after the
// other, with their weight rows read from off-chip memory (docs/engine.md). Per-layer parameters
// come from a descriptor ROM; row tables and biases of all the layers are on chip.
//
// Front end: lane reader (the stage's input channel for its first layer, its own loop-back lanes
// after) -> S1 (row table read) -> a read request per row with beats, and the row's activation in
// a queue -> AXI reader -> each returning beat meets its activation -> PE array.
module fg_seq_stage #(
    parameter integer B = 1,            // lanes of the input channel
    parameter integer P = 1,
    parameter integer LAYERS = 1,
    parameter integer IN_IDX_W = 8,     // index width of the input channel's items
    parameter integer LOOP_IDX_W = 1,   // ... of the loop-back channel's
    parameter integer OUT_IDX_W = 8,    // ... of the output channel's
    parameter integer ADDRESSES = 1,    // accumulator entries per PE: the widest layer's local addresses
    parameter integer LOCAL_W = 1,      // local address bits the PEs take from an off-chip slot
    parameter integer ROWS = 1,         // row-table entries of all layers
    parameter integer START_W = 1,
    parameter integer CNT_W = 1,
    parameter integer W_BITS = 16,
    parameter integer ACC_W = 32,
    parameter integer BIAS_ROWS = 1,
    parameter integer LOOP_DEPTH = 2,   // loop-back lane FIFO depth
    parameter integer MASK_DEPTH = 4,   // loop-back masks buffered
    parameter integer REQUEST_DEPTH = 16,   // row reads queued for the AXI master
    parameter integer ACTIVATION_DEPTH = 32, // activations waiting for their rows' beats
    parameter integer MAX_BURSTS = 16,  // AXI4 read bursts in flight
    parameter integer DENSE = 0,        // the last layer is the model's last: dense beats out
    parameter DESC_FILE = "",
    parameter ROWS_FILE = "",
    parameter BIAS_FILE = "",
    parameter DESC_STYLE = "distributed",  // memory kinds, as the engine plan chose them
    parameter ROWS_STYLE = "block",
    parameter BIAS_STYLE = "block",
    parameter ACC_STYLE = "block",
    parameter REQUEST_STYLE = "distributed",
    parameter ACTIVATION_STYLE = "distributed",
    parameter LOOP_STYLE = "distributed",
    parameter LOOP_MASK_STYLE = "registers"
) (
    input  wire                     clk,
    input  wire                     rst,
    input  wire [63:0]              weights,       // base address of this stage's weight image
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
    // AXI4 read channels (the write channels are tied off by the top)
    output wire [63:0]              araddr,
    output wire [7:0]               arlen,
    output wire [2:0]               arsize,
    output wire                     arvalid,
    input  wire                     arready,
    input  wire [32*P-1:0]          rdata,
    input  wire                     rvalid,
    input  wire                     rlast,
    output wire                     rready,
    output reg  [32*LAYERS-1:0]     perf_busy,
    output reg  [32*LAYERS-1:0]     perf_drain,
    output reg  [31:0]              perf_vectors
);
    localparam integer VALUE_W = 16;  // activations travel as 16-bit values (docs/engine.md)
    localparam integer IN_ITEM_W = 1 + IN_IDX_W + VALUE_W;  // {last, index, value}
    localparam integer LOOP_ITEM_W = 1 + LOOP_IDX_W + VALUE_W;
    localparam integer OUT_ITEM_W = 1 + OUT_IDX_W + VALUE_W;
    // The PEs write items for both the loop-back and the output channel.
    localparam integer PE_IDX_W = (LOOP_IDX_W > OUT_IDX_W) ? LOOP_IDX_W : OUT_IDX_W;
    localparam integer PE_ITEM_W = 1 + PE_IDX_W + VALUE_W;
    localparam integer RD_IDX_W = (LOOP_IDX_W > IN_IDX_W) ? LOOP_IDX_W : IN_IDX_W;
    localparam integer SLOT_W = 1 + LOCAL_W + W_BITS;  // {valid, local, weight} for the PEs
    localparam integer ROW_AW = (ROWS > 1) ? $clog2(ROWS) : 1;
    localparam integer BIAS_AW = (BIAS_ROWS > 1) ? $clog2(BIAS_ROWS) : 1;
    localparam integer LAYER_W = (LAYERS > 1) ? $clog2(LAYERS) : 1;
    localparam integer BEAT_SHIFT = $clog2(4 * P);
    localparam [31:0] LAST_LAYER = LAYERS - 1;

    // ---- layer sequencing ----------------------------------------------------------------------
    // Descriptor fields, 32 bits each: n_out, depth, row_base, bias_base, dram_lo, dram_hi, shift,
    // {hi, lo}.
    localparam [1:0] S_LOAD = 2'd0, S_COMPUTE = 2'd1, S_DRAIN = 2'd2;
    reg [1:0] state;
    reg [LAYER_W-1:0] layer;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [255:0] desc;  // fixed 32-bit fields: the bits above each field's width are padding
    /* verilator lint_on UNUSEDSIGNAL */
    wire [31:0] d_n_out = desc[0 +: 32];
    wire [31:0] d_addresses = desc[32 +: 32];
    wire [ROW_AW-1:0] d_row_base = desc[64 +: ROW_AW];
    wire [BIAS_AW-1:0] d_bias_base = desc[96 +: BIAS_AW];
    wire [63:0] d_dram = desc[128 +: 64];
    wire [5:0] d_shift = desc[192 +: 6];
    wire [VALUE_W-1:0] d_lo = desc[224 +: VALUE_W];
    wire [VALUE_W-1:0] d_hi = desc[240 +: VALUE_W];
    wire first_layer = (layer == {LAYER_W{1'b0}});
    wire last_layer = ({{(32 - LAYER_W){1'b0}}, layer} == LAST_LAYER);

    fg_rom #(.WIDTH(256), .DEPTH(LAYERS), .STYLE(DESC_STYLE), .INIT(DESC_FILE)) u_desc (
        .clk(clk), .en(state == S_LOAD), .addr(layer), .data(desc)
    );

    // ---- input: the stage's channel for the first layer, the loop-back lanes after -------------
    // A single-layer stage hands nothing back: its loop-back signals are constants, unused.
    /* verilator lint_off UNUSEDSIGNAL */
    wire [P*LOOP_ITEM_W-1:0] loop_in_data;
    wire [P-1:0] loop_in_valid;
    wire [P-1:0] loop_in_ready;
    wire [P-1:0] loop_in_mask;
    wire loop_in_mask_valid;
    wire loop_in_mask_ready;
    /* verilator lint_on UNUSEDSIGNAL */

    wire [IN_IDX_W-1:0] e_idx;
    wire [LOOP_IDX_W-1:0] l_idx;
    wire [VALUE_W-1:0] e_val, l_val;
    wire e_eov, l_eov, e_valid, l_valid, e_started, l_started;
    wire r_take;
    reg vector_started;   // this layer's input mask is loaded: load no other until the next layer
    wire use_ext = first_layer;
    wire may_load = state == S_COMPUTE && !vector_started;
    fg_lane_reader #(.LANES(B), .IDX_W(IN_IDX_W)) u_ext_reader (
        .clk(clk), .rst(rst),
        .lane_data(in_data), .lane_valid(in_valid), .lane_ready(in_ready),
        .mask(in_mask), .mask_valid(in_mask_valid && use_ext && may_load), .mask_ready(in_mask_ready),
        .out_idx(e_idx), .out_val(e_val), .out_eov(e_eov), .out_valid(e_valid),
        .out_ready(r_take && use_ext), .started(e_started)
    );

    // The loop-back channel and its reader, when a layer hands its output to the next one.
    genvar g;
    generate
        if (LAYERS > 1) begin : g_loop_back
            wire [P*LOOP_ITEM_W-1:0] loop_data;
            wire [P-1:0] loop_valid;
            wire [P-1:0] loop_ready;
            wire [P-1:0] loop_mask;
            wire loop_mask_valid;
            wire loop_mask_ready;
            for (g = 0; g < P; g = g + 1) begin : g_loop
                fg_fifo #(.WIDTH(LOOP_ITEM_W), .DEPTH(LOOP_DEPTH), .STYLE(LOOP_STYLE)) u_fifo (
                    .clk(clk), .rst(rst),
                    .in_data(loop_in_data[g*LOOP_ITEM_W +: LOOP_ITEM_W]), .in_valid(loop_in_valid[g]),
                    .in_ready(loop_in_ready[g]),
                    .out_data(loop_data[g*LOOP_ITEM_W +: LOOP_ITEM_W]), .out_valid(loop_valid[g]),
                    .out_ready(loop_ready[g])
                );
            end
            fg_fifo #(.WIDTH(P), .DEPTH(MASK_DEPTH), .STYLE(LOOP_MASK_STYLE)) u_loop_mask (
                .clk(clk), .rst(rst),
                .in_data(loop_in_mask), .in_valid(loop_in_mask_valid), .in_ready(loop_in_mask_ready),
                .out_data(loop_mask), .out_valid(loop_mask_valid), .out_ready(loop_mask_ready)
            );
            fg_lane_reader #(.LANES(P), .IDX_W(LOOP_IDX_W)) u_loop_reader (
                .clk(clk), .rst(rst),
                .lane_data(loop_data), .lane_valid(loop_valid), .lane_ready(loop_ready),
                .mask(loop_mask), .mask_valid(loop_mask_valid && !use_ext && may_load), .mask_ready(loop_mask_ready),
                .out_idx(l_idx), .out_val(l_val), .out_eov(l_eov), .out_valid(l_valid),
                .out_ready(r_take && !use_ext), .started(l_started)
            );
        end else begin : g_no_loop_back
            assign loop_in_ready = {P{1'b1}};
            assign loop_in_mask_ready = 1'b1;
            assign l_idx = {LOOP_IDX_W{1'b0}};
            assign l_val = {VALUE_W{1'b0}};
            assign l_eov = 1'b0;
            assign l_valid = 1'b0;
            assign l_started = 1'b0;
        end
    endgenerate
    wire [RD_IDX_W-1:0] e_row, l_row;
    fg_resize #(.IN_W(IN_IDX_W), .OUT_W(RD_IDX_W), .SIGNED(0)) u_e_row (.in(e_idx), .out(e_row));
    fg_resize #(.IN_W(LOOP_IDX_W), .OUT_W(RD_IDX_W), .SIGNED(0)) u_l_row (.in(l_idx), .out(l_row));
    wire [RD_IDX_W-1:0] r_idx = use_ext ? e_row : l_row;
    wire [VALUE_W-1:0] r_val = use_ext ? e_val : l_val;
    wire r_eov = use_ext ? e_eov : l_eov;
    wire r_valid = use_ext ? e_valid : l_valid;

    // ---- S1: row table ---------------------------------------------------------------------------
    reg s1_valid;
    reg s1_eov;
    reg [VALUE_W-1:0] s1_x;
    reg eov_taken;        // this layer's end has left S1
    reg eov_loaded;       // this layer's end is in S1 or beyond: read no further
    wire s2_take;
    assign r_take = r_valid && (!s1_valid || s2_take) && state == S_COMPUTE && !eov_loaded;
    wire [START_W+CNT_W-1:0] row;
    // Row tables of all layers are stacked; the address is wider than any one layer's index.
    /* verilator lint_off UNUSEDSIGNAL */
    wire [31:0] row_address = {{(32 - ROW_AW){1'b0}}, d_row_base} + {{(32 - RD_IDX_W){1'b0}}, r_idx};
    /* verilator lint_on UNUSEDSIGNAL */
    fg_rom #(.WIDTH(START_W + CNT_W), .DEPTH(ROWS), .STYLE(ROWS_STYLE), .INIT(ROWS_FILE)) u_rows (
        .clk(clk), .en(r_take), .addr(row_address[ROW_AW-1:0]), .data(row)
    );
    wire [START_W-1:0] row_start = row[CNT_W +: START_W];
    wire [CNT_W-1:0] row_beats = row[CNT_W-1:0];

    // ---- S2: read requests ------------------------------------------------------------------------
    wire req_in_ready, xq_in_ready;
    wire has_beats = (row_beats != {CNT_W{1'b0}});
    assign s2_take = s1_valid && (s1_eov || !has_beats || (req_in_ready && xq_in_ready));
    wire push = s2_take && !s1_eov && has_beats;
    wire [63:0] req_addr = weights + d_dram + ({{(64 - START_W){1'b0}}, row_start} << BEAT_SHIFT);

    always @(posedge clk) begin
        if (rst) begin
            s1_valid <= 1'b0;
            eov_loaded <= 1'b0;
            eov_taken <= 1'b0;
            vector_started <= 1'b0;
        end else begin
            if (e_started || l_started) vector_started <= 1'b1;
            if (r_take) s1_valid <= 1'b1;
            else if (s2_take) s1_valid <= 1'b0;
            if (r_take && r_eov) eov_loaded <= 1'b1;
            if (s2_take && s1_eov) eov_taken <= 1'b1;
            if (state == S_LOAD) begin
                eov_loaded <= 1'b0;
                eov_taken <= 1'b0;
                vector_started <= 1'b0;
            end
        end
        if (r_take) begin
            s1_eov <= r_eov;
            s1_x <= r_val;
        end
    end

    wire [63:0] q_addr;
    wire [CNT_W-1:0] q_beats;
    wire q_valid, q_ready;
    fg_fifo #(.WIDTH(64 + CNT_W), .DEPTH(REQUEST_DEPTH), .STYLE(REQUEST_STYLE)) u_requests (
        .clk(clk), .rst(rst),
        .in_data({req_addr, row_beats}), .in_valid(push), .in_ready(req_in_ready),
        .out_data({q_addr, q_beats}), .out_valid(q_valid), .out_ready(q_ready)
    );

    wire [VALUE_W-1:0] xq_x;
    wire [CNT_W-1:0] xq_beats;
    wire xq_valid;
    wire xq_pop;
    fg_fifo #(.WIDTH(VALUE_W + CNT_W), .DEPTH(ACTIVATION_DEPTH), .STYLE(ACTIVATION_STYLE)) u_activations (
        .clk(clk), .rst(rst),
        .in_data({s1_x, row_beats}), .in_valid(push), .in_ready(xq_in_ready),
        .out_data({xq_x, xq_beats}), .out_valid(xq_valid), .out_ready(xq_pop)
    );

    wire reader_idle;
    fg_axi_reader #(.DATA_W(32 * P), .LEN_W(CNT_W), .MAX_BURSTS(MAX_BURSTS)) u_axi (
        .clk(clk), .rst(rst),
        .req_addr(q_addr), .req_beats(q_beats), .req_valid(q_valid), .req_ready(q_ready),
        .araddr(araddr), .arlen(arlen), .arsize(arsize), .arvalid(arvalid), .arready(arready),
        .rvalid(rvalid), .rlast(rlast), .rready(rready), .idle(reader_idle)
    );

    // ---- beats meet their activation ---------------------------------------------------------------
    reg [CNT_W-1:0] got;            // beats of the queue's head row received so far
    wire r_fire = rvalid && rready;
    assign rready = xq_valid;
    assign xq_pop = r_fire && (got + 1'b1 == xq_beats);
    always @(posedge clk) begin
        if (rst) got <= {CNT_W{1'b0}};
        else if (xq_pop) got <= {CNT_W{1'b0}};
        else if (r_fire) got <= got + 1'b1;
    end

    // Off-chip words are valid<<31 | local<<16 | weight; the PE array takes {valid, local, weight}.
    wire [P*SLOT_W-1:0] beat_entries;
    generate
        for (g = 0; g < P; g = g + 1) begin : g_unpack
            /* verilator lint_off UNUSEDSIGNAL */
            wire [31:0] word = rdata[32*g +: 32];  // local and weight fields are wider than needed
            /* verilator lint_on UNUSEDSIGNAL */
            assign beat_entries[g*SLOT_W +: SLOT_W] = {word[31], word[16 +: LOCAL_W], word[W_BITS-1:0]};
        end
    endgenerate

    wire all_beats_in = eov_taken && !s1_valid && !q_valid && !xq_valid && reader_idle;
    reg eov_sent;
    wire eov_issue = state == S_COMPUTE && all_beats_in && !eov_sent;
    wire issue_bank;
    // Layers run one at a time and a layer starts only after the previous drain: its bank is free.
    /* verilator lint_off UNUSEDSIGNAL */
    wire issue_ok;
    /* verilator lint_on UNUSEDSIGNAL */

    reg m0_valid, m0_eov, m0_bank;
    reg [VALUE_W-1:0] m0_x;
    reg [P*SLOT_W-1:0] m0_entries;
    always @(posedge clk) begin
        if (rst) begin
            m0_valid <= 1'b0;
            m0_eov <= 1'b0;
        end else begin
            m0_valid <= r_fire;
            m0_eov <= eov_issue;
        end
        m0_x <= xq_x;
        m0_entries <= beat_entries;
        m0_bank <= issue_bank;
    end

    // ---- PEs -------------------------------------------------------------------------------------
    wire draining, drain_waiting, drain_done;
    wire [P*PE_ITEM_W-1:0] pe_data;
    wire [P-1:0] pe_valid;
    wire [P-1:0] pe_ready = last_layer ? out_ready : loop_in_ready;
    wire [P-1:0] pe_mask;
    wire pe_mask_valid;
    wire pe_mask_ready = last_layer ? out_mask_ready : loop_in_mask_ready;
    // Each channel takes the PEs' items with its own index width: the layer that writes it has
    // no larger index.
    generate
        for (g = 0; g < P; g = g + 1) begin : g_items
            /* verilator lint_off UNUSEDSIGNAL */
            wire [PE_ITEM_W-1:0] item = pe_data[g*PE_ITEM_W +: PE_ITEM_W];  // index bits beyond a channel's
            /* verilator lint_on UNUSEDSIGNAL */
            assign loop_in_data[g*LOOP_ITEM_W +: LOOP_ITEM_W] =
                {item[PE_ITEM_W-1], item[VALUE_W +: LOOP_IDX_W], item[VALUE_W-1:0]};
            assign out_data[g*OUT_ITEM_W +: OUT_ITEM_W] =
                {item[PE_ITEM_W-1], item[VALUE_W +: OUT_IDX_W], item[VALUE_W-1:0]};
        end
    endgenerate
    assign loop_in_valid = pe_valid & {P{!last_layer}};
    assign loop_in_mask = pe_mask;
    assign loop_in_mask_valid = pe_mask_valid && !last_layer;
    assign out_valid = pe_valid & {P{last_layer}};
    assign out_mask = pe_mask;
    assign out_mask_valid = pe_mask_valid && last_layer;

    fg_pe_array #(
        .P(P), .ADDRESSES(ADDRESSES), .LOCAL_W(LOCAL_W), .W_BITS(W_BITS), .ACC_W(ACC_W), .IDX_W(PE_IDX_W),
        .BIAS_ROWS(BIAS_ROWS), .BIAS_FILE(BIAS_FILE), .BIAS_STYLE(BIAS_STYLE), .ACC_STYLE(ACC_STYLE)
    ) u_pes (
        .clk(clk), .rst(rst),
        .mac_valid(m0_valid), .mac_eov(m0_eov), .mac_bank(m0_bank), .mac_x(m0_x), .mac_entries(m0_entries),
        .vector_issued(eov_issue), .issue_bank(issue_bank), .issue_ok(issue_ok),
        .cfg_shift(d_shift), .cfg_lo(d_lo), .cfg_hi(d_hi),
        .cfg_n_out(d_n_out), .cfg_addresses(d_addresses), .cfg_bias_base(d_bias_base),
        .cfg_dense(DENSE != 0 && last_layer),
        .lane_data(pe_data), .lane_valid(pe_valid), .lane_ready(pe_ready),
        .mask_data(pe_mask), .mask_valid(pe_mask_valid), .mask_ready(pe_mask_ready),
        .dense_data(dense_data), .dense_last(dense_last), .dense_valid(dense_valid), .dense_ready(dense_ready),
        .draining(draining), .drain_waiting(drain_waiting), .drain_done(drain_done)
    );

    always @(posedge clk) begin
        if (rst) begin
            state <= S_LOAD;
            layer <= {LAYER_W{1'b0}};
            eov_sent <= 1'b0;
        end else begin
            case (state)
                S_LOAD: begin
                    state <= S_COMPUTE;
                    eov_sent <= 1'b0;
                end
                S_COMPUTE: if (eov_issue) begin
                    eov_sent <= 1'b1;
                    state <= S_DRAIN;
                end
                default: if (drain_done) begin
                    state <= S_LOAD;
                    layer <= last_layer ? {LAYER_W{1'b0}} : layer + 1'b1;
                end
            endcase
        end
    end

    // ---- performance counters (per layer) -------------------------------------------------------
    // A layer's compute runs from the load of its input mask (the whole vector is there) to the
    // issue of its end, memory waits included; its drain's cycles stalled on full outputs are not
    // counted.
    always @(posedge clk) begin
        if (rst) begin
            perf_busy <= {(32 * LAYERS){1'b0}};
            perf_drain <= {(32 * LAYERS){1'b0}};
            perf_vectors <= 32'd0;
        end else begin
            if (state == S_COMPUTE && !eov_sent && (vector_started || e_started || l_started))
                perf_busy[layer*32 +: 32] <= perf_busy[layer*32 +: 32] + 32'd1;
            if (draining && !drain_waiting) perf_drain[layer*32 +: 32] <= perf_drain[layer*32 +: 32] + 32'd1;
            if (drain_done && last_layer) perf_vectors <= perf_vectors + 32'd1;
        end
    end
endmodule
