// A sequential stage (docs/engine.md): one engine of P PEs runs LAYERS consecutive layers, one
// pass per layer, with their weight rows read from off-chip memory. Per-layer parameters come
// from a descriptor ROM; the row tables and biases of all the layers are on chip, stacked, in RAMs
// (UltraRAM when large) that the load phase fills from the start of the weight image at every
// `load` (the start of a batch), before the first pass (docs/engine.md, "Load phase").
//
// A pass: activations (from the stage's input channel for its first layer, from its own
// loop-back FIFO after) -> row lookup -> a read request per row with beats and the row's
// activation in a queue -> an AXI reader per memory channel (CHANNELS of them, each bringing its
// share of every beat: docs/engine.md, "Striped channels") -> each beat, once every channel holds
// its share, meets its activation and its valid
// slots go into the PEs' FIFOs -> when every beat is in, an end entry at every PE -> when every PE
// is done, the drain: requantize with the layer's parameters, and serialize the nonzero outputs
// into the loop-back FIFO, the output channel, or dense beats for the model's last layer. Passes
// alternate the PEs' banks.
module fg_seq_stage #(
    parameter integer S = 1,            // sub-channels of the input channel
    parameter integer P = 1,
    parameter integer PB = 0,           // log2(P)
    parameter integer GB = 1,           // max(1, log2(P)): positions in a drained word
    parameter integer COUNT_W = 1,      // bits holding 0..P
    parameter integer LAYERS = 1,
    parameter integer IN_IDX_W = 1,
    parameter integer LOOP_IDX_W = 1,
    parameter integer OUT_IDX_W = 1,
    parameter integer ADDRESSES = 1,    // accumulator entries per PE: the widest layer's
    parameter integer LOCAL_W = 1,
    parameter integer ROWS = 1,
    parameter integer START_W = 1,
    parameter integer CNT_W = 1,
    parameter integer W_BITS = 16,      // 0: positions only, every layer's nonzeros are SCALE
    parameter integer SLOT_W = 32,      // an off-chip slot {valid, local, weight}: 8, 16 or 32 bits
    parameter integer CHANNELS = 1,     // AXI4 masters; channel c carries the slots of PEs c*P/CHANNELS ..
    parameter integer ACC_W = 32,
    parameter integer SUM_W = ACC_W,    // the accumulators
    parameter integer SCALE = 1,        // positions only: the one weight (fg_pe.v)
    parameter integer SCALE_SHIFT = 0,  // log2 |SCALE|, or -1 when |SCALE| is no power of two
    parameter integer BIAS_ROWS = 1,
    parameter integer ROW_TABLE_BEATS = 1,  // beats of row-table entries at the image's start, P to a beat
    parameter integer BIAS_WORDS = 1,   // 32-bit words of one bias value in the image (bias rows follow)
    parameter integer DENSE = 0,        // the last layer is the model's last: dense beats out
    parameter integer ROTATED = 0,      // ... its outputs rotated over the PEs, r_a an address (fg_dense.v)
    parameter integer ROT_W = 1,
    parameter integer ROTATED_ADDRESSES = 1,  // the last layer's local addresses
    parameter [ROTATED_ADDRESSES*ROT_W-1:0] ROTATIONS = 0,
    parameter integer PE_FIFO_DEPTH = 32,
    parameter integer PE_SLACK = 8,
    parameter integer ITEM_FIFO_DEPTH = 8,
    parameter integer ITEM_SLACK = 3,
    parameter integer LOOP_DEPTH = 32,
    parameter integer LOOP_SLACK = 3,   // the serializer's item register and the flag's own register
    parameter integer REQUEST_DEPTH = 16,
    parameter integer ACTIVATION_DEPTH = 32,
    parameter integer MAX_BURSTS = 16,
    parameter integer WORD_FIFO_DEPTH = 32,
    parameter integer DRAIN_SLACK = 12,
    parameter DESC_FILE = "",
    parameter DESC_STYLE = "distributed",  // memory kinds, as the engine plan chose them
    parameter ROWS_STYLE = "block",
    parameter BIAS_STYLE = "block",
    parameter ACC_STYLE = "distributed",
    parameter integer SINGLE_CYCLE = 0, // the PEs' one-cycle read-modify-write (fg_pe.v)
    parameter PE_FIFO_STYLE = "distributed",
    parameter ITEM_FIFO_STYLE = "distributed",
    parameter LOOP_STYLE = "distributed",
    parameter REQUEST_STYLE = "distributed",
    parameter ACTIVATION_STYLE = "distributed",
    parameter WORD_FIFO_STYLE = "distributed"
) (
    input  wire                     clk,
    input  wire                     rst,
    input  wire [64*CHANNELS-1:0]   weights,        // base address of each channel's weight image
    input  wire                     load,           // pulse: a batch starts, fill the tables from the image
    input  wire [S*IN_ITEM_W-1:0]   in_item,
    input  wire [S-1:0]             in_valid,
    output wire [S-1:0]             in_pop,
    output wire [OUT_ITEM_W-1:0]    out_item,
    output wire                     out_valid,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire                     out_room,       // unused by a stage of one layer that drains dense beats
    /* verilator lint_on UNUSEDSIGNAL */
    output wire [P*VALUE_W-1:0]     dense_data,
    output wire                     dense_last,
    output wire                     dense_valid,
    input  wire                     dense_room,
    // AXI4 read channels of each memory channel, channel 0 lowest (the write channels are tied
    // off by the core); rdata is the beat they carry together
    output wire [64*CHANNELS-1:0]   araddr,
    output wire [8*CHANNELS-1:0]    arlen,
    output wire [3*CHANNELS-1:0]    arsize,
    output wire [CHANNELS-1:0]      arvalid,
    input  wire [CHANNELS-1:0]      arready,
    input  wire [SLOT_W*P-1:0]      rdata,
    input  wire [CHANNELS-1:0]      rvalid,
    input  wire [CHANNELS-1:0]      rlast,
    output wire [CHANNELS-1:0]      rready,
    output reg  [32*LAYERS-1:0]     perf_busy,
    output reg  [32*LAYERS-1:0]     perf_drain,
    output reg  [31:0]              perf_vectors
);
    localparam integer VALUE_W = 16;  // activations travel as 16-bit values (docs/engine.md)
    localparam integer IN_ITEM_W = 1 + IN_IDX_W + VALUE_W;
    localparam integer LOOP_ITEM_W = 1 + LOOP_IDX_W + VALUE_W;
    localparam integer OUT_ITEM_W = 1 + OUT_IDX_W + VALUE_W;
    localparam integer RD_IDX_W = (LOOP_IDX_W > IN_IDX_W) ? LOOP_IDX_W : IN_IDX_W;
    localparam integer RD_ITEM_W = 1 + RD_IDX_W + VALUE_W;
    localparam integer DR_IDX_W = (LOOP_IDX_W > OUT_IDX_W) ? LOOP_IDX_W : OUT_IDX_W;
    localparam integer DR_ITEM_W = 1 + DR_IDX_W + VALUE_W;
    localparam integer ENTRY_W = LOCAL_W + W_BITS + VALUE_W;  // {local, weight, x} (fg_pe.v)
    localparam integer ROW_AW = (ROWS > 1) ? $clog2(ROWS) : 1;
    localparam integer BIAS_AW = (BIAS_ROWS > 1) ? $clog2(BIAS_ROWS) : 1;
    localparam integer LAYER_W = (LAYERS > 1) ? $clog2(LAYERS) : 1;
    localparam integer BEAT_W = SLOT_W * P;
    localparam integer PORT_W = BEAT_W / CHANNELS;  // a channel's share of a beat
    localparam integer PORT_SHIFT = $clog2(PORT_W / 8);
    localparam integer PARTS = 32 / SLOT_W;  // port beats in a beat of the tables (32-bit fields)
    localparam [31:0] LAST_PART32 = PARTS - 1;
    localparam integer ROW_W = START_W + CNT_W;
    localparam integer WORD_W = 1 + LOCAL_W + COUNT_W + P + P * VALUE_W;
    localparam integer DRAIN_LATENCY = 6;
    localparam [31:0] LAST_LAYER32 = LAYERS - 1;

    // ---- layer sequencing -----------------------------------------------------------------------------
    // LOAD: read the descriptor (two cycles); COMPUTE: the pass's activations and beats; DONE: wait
    // for every PE; DRAIN: read the bank out.
    localparam [2:0] S_LOAD = 3'd0, S_LOAD2 = 3'd1, S_LOAD3 = 3'd2, S_COMPUTE = 3'd3, S_DONE = 3'd4,
                     S_DRAIN = 3'd5, S_FILL = 3'd6;
    reg [2:0] state;
    reg [LAYER_W-1:0] layer;
    reg bank;                           // the PEs' bank of this pass
    /* verilator lint_off UNUSEDSIGNAL */
    wire [255:0] desc;  // fixed 32-bit fields: the bits above each field's width are padding
    /* verilator lint_on UNUSEDSIGNAL */
    reg [LOCAL_W-1:0] d_last_address;
    reg [ROW_AW-1:0] d_row_base;
    reg [BIAS_AW-1:0] d_bias_base;
    reg [5:0] d_shift;
    reg [VALUE_W-1:0] d_lo, d_hi;
    reg [31:0] d_last_outputs;          // real outputs at the last address
    wire first_layer = (layer == {LAYER_W{1'b0}});
    wire last_layer = ({{(32 - LAYER_W){1'b0}}, layer} == LAST_LAYER32);
    // The serializer finishes a pass's words after the pass has ended and the layer has moved on:
    // where its items go is the drained layer's, kept from the start of its drain.
    reg serial_last;

    // The load phase's registers (below, "load phase").
    localparam integer BIAS_BEATS = BIAS_ROWS * BIAS_WORDS;
    localparam integer TABLE_BEATS = ROW_TABLE_BEATS + BIAS_BEATS;
    localparam [CNT_W-1:0] ONE_BEAT = 1;
    localparam [31:0] LAST_ROW32 = ROWS - 1;
    localparam [31:0] LAST_BIAS32 = BIAS_ROWS - 1;
    localparam [31:0] TABLE_BEATS32 = TABLE_BEATS;
    localparam [31:0] LOAD_BEATS32 = TABLE_BEATS * PARTS;
    localparam [31:0] ROW_TABLE_BEATS32 = ROW_TABLE_BEATS;
    reg fill_wanted, filled;            // a load asked for; the tables hold the image's
    reg [31:0] fill_asked, fill_got;    // port beats requested, and table beats received
    reg [1:0] part;                     // port beats of the table beat coming in, received so far
    reg fill_push;
    wire fill_start = state == S_LOAD && fill_wanted;  // the load phase starts: the tables' reads from each image's start
    reg [32*P-1:0] fill_beat;           // a row-table beat, shifted one entry a cycle
    reg [31:0] fill_entries;            // entries of `fill_beat` still to write
    reg [ROW_AW-1:0] next_row;
    /* verilator lint_off UNUSEDSIGNAL */
    reg [BIAS_WORDS*32*P-1:0] bias_words; // the words of a bias row so far, the first lowest (sign bits above ACC_W unused)
    /* verilator lint_on UNUSEDSIGNAL */
    reg [31:0] bias_word;               // words of the current bias row received
    reg bias_write;
    reg [BIAS_AW-1:0] bias_waddr, next_bias;
    reg rows_written, bias_written;
    reg row_write;
    reg [ROW_AW-1:0] row_waddr;
    reg [ROW_W-1:0] row_wdata;
    wire [P*ACC_W-1:0] bias_fill;       // a bias row of the image, as the bias RAM holds it
    wire filling = state == S_FILL;
    wire fill_ready = fill_entries <= 32'd1;  // the next beat may come with the last entry's write
    wire last_part = {30'd0, part} == LAST_PART32;
    wire fill_done = fill_got == TABLE_BEATS32 && fill_ready && rows_written && bias_written && !bias_write
                     && !row_write;
    wire in_rows = fill_got < ROW_TABLE_BEATS32;

    /* verilator lint_off PINCONNECTEMPTY */
    fg_rom #(.WIDTH(256), .DEPTH(LAYERS), .PORTS(1), .STYLE(DESC_STYLE), .INIT(DESC_FILE)) u_desc (
        .clk(clk), .en(state == S_LOAD), .addr(layer), .data(desc)
    );
    /* verilator lint_on PINCONNECTEMPTY */

    // ---- input: the channel for the first layer, the loop-back FIFO after -------------------------------
    wire [LOOP_ITEM_W-1:0] loop_head;
    wire loop_valid;
    /* verilator lint_off UNUSEDSIGNAL */
    wire loop_pop;                      // unused by a stage of one layer: it has no loop-back FIFO
    /* verilator lint_on UNUSEDSIGNAL */
    wire [DR_ITEM_W-1:0] drained_item;
    wire drained_valid;
    /* verilator lint_off UNUSEDSIGNAL */
    wire loop_room;                     // unused by a stage of one layer that drains dense beats
    /* verilator lint_on UNUSEDSIGNAL */
    generate
        if (LAYERS > 1) begin : g_loop_back
            wire [DR_ITEM_W-1:0] to_loop = drained_item;
            /* verilator lint_off PINCONNECTEMPTY */
            fg_fifo #(.WIDTH(LOOP_ITEM_W), .DEPTH(LOOP_DEPTH), .SLACK(LOOP_SLACK), .STYLE(LOOP_STYLE)) u_loop (
                .clk(clk), .rst(rst),
                .in_data({to_loop[DR_ITEM_W-1], to_loop[VALUE_W +: LOOP_IDX_W], to_loop[VALUE_W-1:0]}),
                .in_valid(drained_valid && !serial_last), .in_ready(), .room(loop_room),
                .out_data(loop_head), .out_valid(loop_valid), .out_ready(loop_pop)
            );
            /* verilator lint_on PINCONNECTEMPTY */
        end else begin : g_no_loop_back
            assign loop_head = {LOOP_ITEM_W{1'b0}};
            assign loop_valid = 1'b0;
            assign loop_room = 1'b1;
        end
    endgenerate

    // The first layer's activations come from the input channel, its S sub-channels merged into
    // the one unit; a later layer's from the loop-back FIFO, one a cycle through a register. Both
    // go into the activation FIFO.
    wire computing = state == S_COMPUTE;
    reg taken_end;                      // this pass's end item is on its way: take nothing more
    // Registered a cycle ahead, so that no state decoding sits in front of the merger or the
    // loop-back FIFO (timing): `open`, the pass may take items (computing, its end not taken yet);
    // `from_input`, they come from the input channel (the first layer).
    reg open, from_input;
    wire item_room;
    wire [S*RD_ITEM_W-1:0] merge_in;   // the input's items with indices of RD_IDX_W bits
    genvar s;
    generate
        for (s = 0; s < S; s = s + 1) begin : g_merge_in
            wire [RD_IDX_W-1:0] in_index;
            fg_resize #(.IN_W(IN_IDX_W), .OUT_W(RD_IDX_W), .SIGNED(0)) u_in (
                .in(in_item[s*IN_ITEM_W + VALUE_W +: IN_IDX_W]), .out(in_index)
            );
            assign merge_in[s*RD_ITEM_W +: RD_ITEM_W] = {in_item[s*IN_ITEM_W + IN_ITEM_W - 1], in_index,
                                                         in_item[s*IN_ITEM_W +: VALUE_W]};
        end
    endgenerate
    wire [RD_ITEM_W-1:0] dealt;
    wire dealt_valid, merged;
    /* verilator lint_off PINCONNECTEMPTY */
    fg_merger #(.S(S), .K(1), .IDX_W(RD_IDX_W)) u_merger (
        .clk(clk), .rst(rst), .enable(open && from_input),
        .in_item(merge_in), .in_valid(in_valid), .in_pop(in_pop),
        .out_item(dealt), .out_valid(dealt_valid), .out_room(item_room), .vector_in(merged), .vector_empty()
    );
    /* verilator lint_on PINCONNECTEMPTY */

    wire [RD_IDX_W-1:0] loop_index;
    fg_resize #(.IN_W(LOOP_IDX_W), .OUT_W(RD_IDX_W), .SIGNED(0)) u_loop_index (
        .in(loop_head[VALUE_W +: LOOP_IDX_W]), .out(loop_index)
    );
    assign loop_pop = open && !from_input && item_room;
    wire loop_take = loop_pop && loop_valid;
    reg [RD_ITEM_W-1:0] looped;
    reg looped_valid;

    wire passed = from_input ? merged : loop_take && loop_head[LOOP_ITEM_W-1];  // the end item taken now
    always @(posedge clk) begin
        if (rst || state == S_LOAD) taken_end <= 1'b0;
        else if (passed && computing) taken_end <= 1'b1;
        open <= !rst && (state == S_LOAD3 || (computing && !taken_end && !passed));
        from_input <= first_layer;  // the layer changes at the end of a drain, cycles before LOAD3
        looped_valid <= !rst && loop_take;
        looped <= {loop_head[LOOP_ITEM_W-1], loop_index, loop_head[VALUE_W-1:0]};
    end

    wire [RD_ITEM_W-1:0] item;
    wire item_valid, item_pop;
    /* verilator lint_off PINCONNECTEMPTY */
    fg_fifo #(.WIDTH(RD_ITEM_W), .DEPTH(ITEM_FIFO_DEPTH), .SLACK(ITEM_SLACK), .STYLE(ITEM_FIFO_STYLE)) u_items (
        .clk(clk), .rst(rst),
        .in_data(from_input ? dealt : looped), .in_valid(dealt_valid || looped_valid), .in_ready(),
        .room(item_room), .out_data(item), .out_valid(item_valid), .out_ready(item_pop)
    );
    /* verilator lint_on PINCONNECTEMPTY */

    // ---- row lookup -> read requests and waiting activations -----------------------------------------
    wire req_room, act_room;
    reg l1_valid, l2_valid, l3_valid;
    reg l1_end, l2_end, l3_end;
    reg [VALUE_W-1:0] l1_x, l2_x, l3_x;
    reg [RD_IDX_W-1:0] l1_index;
    reg ended;                          // this pass's end item has been looked up
    reg end_taken;                      // this pass's end item has left the item FIFO: take no more
    assign item_pop = item_valid && req_room && act_room && computing && !end_taken && !fill_wanted;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [31:0] row_address = {{(32 - ROW_AW){1'b0}}, d_row_base} + {{(32 - RD_IDX_W){1'b0}}, l1_index};
    /* verilator lint_on UNUSEDSIGNAL */
    reg [ROW_AW-1:0] l2_row;
    wire [ROW_W-1:0] row;
    fg_table #(.WIDTH(ROW_W), .DEPTH(ROWS), .STYLE(ROWS_STYLE)) u_rows (
        .clk(clk), .we(row_write), .waddr(row_waddr), .wdata(row_wdata),
        .en(l2_valid), .addr(l2_row), .data(row)
    );
    reg l4_valid, l4_end;
    reg [VALUE_W-1:0] l4_x;
    always @(posedge clk) begin
        if (rst || state == S_LOAD) begin
            l1_valid <= 1'b0;
            l2_valid <= 1'b0;
            l3_valid <= 1'b0;
            l4_valid <= 1'b0;
            ended <= 1'b0;
            end_taken <= 1'b0;
        end else begin
            if (item_pop && item[RD_ITEM_W-1]) end_taken <= 1'b1;
            l1_valid <= item_pop;
            l2_valid <= l1_valid;
            l3_valid <= l2_valid;
            l4_valid <= l3_valid;
            if (l4_valid && l4_end) ended <= 1'b1;
        end
        {l1_end, l1_index, l1_x} <= item;
        l2_end <= l1_end;
        l2_x <= l1_x;
        l2_row <= row_address[ROW_AW-1:0];
        l3_end <= l2_end;
        l3_x <= l2_x;
        l4_end <= l3_end;
        l4_x <= l3_x;
    end
    wire [START_W-1:0] row_start = row[CNT_W +: START_W];
    wire [CNT_W-1:0] row_beats = row[CNT_W-1:0];
    // A row with beats becomes a read of them; its activation waits for them.
    wire push = l4_valid && !l4_end && row_beats != {CNT_W{1'b0}};
    reg [CNT_W-1:0] req_beats;
    reg [VALUE_W-1:0] req_x;
    reg req_push;
    always @(posedge clk) begin
        req_push <= !rst && push;
        req_beats <= row_beats;
        req_x <= l4_x;
    end

    wire [VALUE_W-1:0] act_x;
    wire [CNT_W-1:0] act_beats;
    wire act_valid, act_pop;
    /* verilator lint_off PINCONNECTEMPTY */
    fg_fifo #(.WIDTH(VALUE_W + CNT_W), .DEPTH(ACTIVATION_DEPTH), .SLACK(7), .STYLE(ACTIVATION_STYLE)) u_acts (
        .clk(clk), .rst(rst),
        .in_data({req_x, req_beats}), .in_valid(req_push), .in_ready(), .room(act_room),
        .out_data({act_x, act_beats}), .out_valid(act_valid), .out_ready(act_pop)
    );
    /* verilator lint_on PINCONNECTEMPTY */

    // Each channel: the addresses of the reads in its own image (the layer's weights, the row, the
    // load phase's next table beat), its queue of reads and its AXI reader. The same reads go to
    // every channel, at the same offsets, and their shares of each beat come back in order.
    wire [CHANNELS-1:0] q_valid, channel_room, channel_idle;
    wire take;                          // the stage takes the beat the channels hold
    wire beat_valid = &rvalid;          // every channel holds its share of the next beat
    genvar c;
    generate
        for (c = 0; c < CHANNELS; c = c + 1) begin : g_channel
            reg [63:0] dram, req_addr, fill_addr;
            always @(posedge clk) begin
                // the descriptor: the layer's weights, a byte offset in each channel's image
                if (state == S_LOAD3) dram <= weights[64*c +: 64] + desc[128 +: 64];
                req_addr <= dram + ({{(64 - START_W){1'b0}}, row_start} << PORT_SHIFT);
                if (fill_start) fill_addr <= weights[64*c +: 64];
                else if (fill_push) fill_addr <= fill_addr + (64'd1 << PORT_SHIFT);
            end
            wire [63:0] q_addr;
            wire [CNT_W-1:0] q_beats;
            wire q_pop;
            /* verilator lint_off PINCONNECTEMPTY */
            fg_fifo #(.WIDTH(64 + CNT_W), .DEPTH(REQUEST_DEPTH), .SLACK(7), .STYLE(REQUEST_STYLE)) u_requests (
                .clk(clk), .rst(rst),
                .in_data(fill_push ? {fill_addr, ONE_BEAT} : {req_addr, req_beats}), .in_valid(req_push || fill_push),
                .in_ready(), .room(channel_room[c]),
                .out_data({q_addr, q_beats}), .out_valid(q_valid[c]), .out_ready(q_pop)
            );
            /* verilator lint_on PINCONNECTEMPTY */
            fg_axi_reader #(.DATA_W(PORT_W), .LEN_W(CNT_W), .MAX_BURSTS(MAX_BURSTS)) u_axi (
                .clk(clk), .rst(rst),
                .req_addr(q_addr), .req_beats(q_beats), .req_valid(q_valid[c]), .req_pop(q_pop),
                .araddr(araddr[64*c +: 64]), .arlen(arlen[8*c +: 8]), .arsize(arsize[3*c +: 3]),
                .arvalid(arvalid[c]), .arready(arready[c]),
                .rvalid(rvalid[c]), .rlast(rlast[c]), .rready(rready[c]), .idle(channel_idle[c])
            );
            if (CHANNELS == 1) begin : g_alone
                assign rready[c] = take;
            end else begin : g_joined
                assign rready[c] = take && beat_valid;  // the channels' shares are taken together
            end
        end
    endgenerate
    assign req_room = &channel_room;
    wire reader_idle = &channel_idle;

    // ---- beats meet their activation, into the PEs' FIFOs ---------------------------------------------
    wire ok;                            // every PE FIFO has room (registered)
    reg [CNT_W-1:0] got;                // beats of the head activation's row received so far
    wire r_fire = beat_valid && take && !filling;  // a weight beat
    wire fill_fire = beat_valid && take && filling;  // a beat of the tables
    assign take = filling ? fill_ready || !last_part : act_valid && ok;  // a table beat's earlier parts wait in `parts`
    assign act_pop = r_fire && (got + 1'b1 == act_beats);
    always @(posedge clk) begin
        if (rst) got <= {CNT_W{1'b0}};
        else if (act_pop) got <= {CNT_W{1'b0}};
        else if (r_fire) got <= got + 1'b1;
    end
    // Every beat is in: the end entries go to the PEs. Registered (a cycle a pass), since the
    // reader's idle flag compares its count of bursts in flight with zero (timing); once true it
    // stays true until the pass ends, and `ended` is clear cycles before the next pass computes.
    // A request written in one cycle shows in the FIFOs' outputs two cycles later: `req_pushed`
    // covers the cycle between (a pass whose last row is looked up just before its end item, with
    // no other read in flight, would end without that row's beats).
    reg all_in, req_pushed;
    always @(posedge clk) begin
        req_pushed <= !rst && req_push;
        all_in <= !rst && ended && !l1_valid && !l2_valid && !l3_valid && !l4_valid && !req_push && !req_pushed
                  && !(|q_valid) && !act_valid && reader_idle;
    end
    reg end_sent;
    wire send_end = computing && all_in && !end_sent && ok;

    reg [P*ENTRY_W-1:0] entry;
    reg [P-1:0] entry_write;
    // an end entry's x is zero; every other x is a nonzero activation (fg_pe.v)
    wire [VALUE_W-1:0] entry_x = send_end ? {VALUE_W{1'b0}} : act_x;
    integer q;
    always @(posedge clk) begin
        for (q = 0; q < P; q = q + 1) begin
            // off-chip slot: valid << (SLOT_W - 1) | local << W_BITS | weight, the local field padded
            // above its LOCAL_W bits: {local, weight} are the slot's low LOCAL_W + W_BITS bits
            // (W_BITS = 0: positions only)
            entry_write[q] <= !rst && (send_end || (r_fire && rdata[SLOT_W*q + SLOT_W - 1]));
            entry[q*ENTRY_W +: ENTRY_W] <= {rdata[SLOT_W*q +: LOCAL_W + W_BITS], entry_x};
        end
    end

    // ---- load phase: the tables, from the start of the image ---------------------------------------
    // One-beat reads of the image's first LOAD_BEATS beats through the AXI reader. The tables keep
    // 32-bit fields whatever the slots' width: a beat of them is PARTS port beats, the first lowest,
    // gathered in a shift register. A row-table beat holds P entries, written one a cycle from a
    // shift register (no wide mux); a bias row is BIAS_WORDS beats, each value in BIAS_WORDS * 32
    // bits, written once whole.
    wire table_fire = fill_fire && last_part;  // a whole beat of the tables is in
    wire [32*P-1:0] table_beat;
    wire [BIAS_WORDS*32*P-1:0] bias_shifted;  // a bias beat in, at the top
    genvar t;
    generate
        if (PARTS > 1) begin : g_parts
            reg [(PARTS-1)*BEAT_W-1:0] parts;  // the table beat's port beats so far
            if (PARTS > 2) begin : g_shift
                always @(posedge clk) if (fill_fire) parts <= {rdata, parts[(PARTS-1)*BEAT_W-1:BEAT_W]};
            end else begin : g_hold
                always @(posedge clk) if (fill_fire) parts <= rdata;
            end
            assign table_beat = {rdata, parts};
        end else begin : g_whole
            assign table_beat = rdata;
        end
        if (BIAS_WORDS > 1) begin : g_bias_words
            assign bias_shifted = {table_beat, bias_words[BIAS_WORDS*32*P-1:32*P]};
        end else begin : g_bias_word
            assign bias_shifted = table_beat;
        end
        for (t = 0; t < P; t = t + 1) begin : g_bias_fill
            assign bias_fill[t*ACC_W +: ACC_W] = bias_words[t*BIAS_WORDS*32 +: ACC_W];
        end
    endgenerate
    always @(posedge clk) begin
        row_write <= 1'b0;
        bias_write <= 1'b0;
        fill_push <= 1'b0;
        if (rst) begin
            fill_wanted <= 1'b0;
            filled <= 1'b0;
            fill_entries <= 32'd0;
        end else begin
            if (load) begin
                fill_wanted <= 1'b1;
                filled <= 1'b0;
            end
            if (fill_start) begin
                fill_wanted <= 1'b0;
                fill_asked <= 32'd0;
                fill_got <= 32'd0;
                next_row <= {ROW_AW{1'b0}};
                next_bias <= {BIAS_AW{1'b0}};
                bias_word <= 32'd0;
                part <= 2'd0;
                rows_written <= 1'b0;
                bias_written <= 1'b0;
            end
            if (filling && fill_done) filled <= 1'b1;
            // requests, one beat each, while the request FIFO shows room
            if (filling && req_room && fill_asked != LOAD_BEATS32) begin
                fill_push <= 1'b1;
                fill_asked <= fill_asked + 32'd1;
            end
            // row-table beats: one entry a cycle, the next beat taken with the last entry
            if (fill_entries != 32'd0 && !rows_written) begin
                row_write <= 1'b1;
                row_waddr <= next_row;
                row_wdata <= fill_beat[ROW_W-1:0];
                next_row <= next_row + 1'b1;
                if ({{(32 - ROW_AW){1'b0}}, next_row} == LAST_ROW32) rows_written <= 1'b1;
            end
            if (fill_fire) part <= last_part ? 2'd0 : part + 2'd1;
            if (table_fire && in_rows) begin
                fill_beat <= table_beat;
                fill_entries <= P;
                fill_got <= fill_got + 32'd1;
            end else if (fill_entries != 32'd0) begin
                fill_beat <= fill_beat >> 32;
                fill_entries <= fill_entries - 32'd1;
            end
            // bias beats: a row every BIAS_WORDS
            if (table_fire && !in_rows) begin
                bias_words <= bias_shifted;
                fill_got <= fill_got + 32'd1;
                bias_word <= (bias_word == BIAS_WORDS - 1) ? 32'd0 : bias_word + 32'd1;
                if (bias_word == BIAS_WORDS - 1) begin
                    bias_write <= 1'b1;
                    bias_waddr <= next_bias;
                    next_bias <= next_bias + 1'b1;
                    if ({{(32 - BIAS_AW){1'b0}}, next_bias} == LAST_BIAS32) bias_written <= 1'b1;
                end
            end
        end
    end

    // ---- PEs ---------------------------------------------------------------------------------------------
    wire [P-1:0] pe_ready, pe_room, pe_busy, done0, done1;
    wire [P*VALUE_W-1:0] y;
    wire run, whole0, whole1;
    reg drain_read;
    reg drain_bank;
    reg [LOCAL_W-1:0] drain_addr;
    reg [1:0] drained;
    wire [P*ACC_W-1:0] bias_row;
    genvar p;
    generate
        for (p = 0; p < P; p = p + 1) begin : g_pe
            wire [1:0] done;
            assign done0[p] = done[0];
            assign done1[p] = done[1];
            wire [SUM_W-1:0] sum;
            fg_pe #(
                .K(1), .LOCAL_W(LOCAL_W), .ADDRESSES(ADDRESSES), .W_BITS(W_BITS), .SUM_W(SUM_W),
                .SCALE(SCALE), .SCALE_SHIFT(SCALE_SHIFT),
                .FIFO_DEPTH(PE_FIFO_DEPTH), .SLACK(PE_SLACK), .FIFO_STYLE(PE_FIFO_STYLE), .ACC_STYLE(ACC_STYLE),
                .SINGLE_CYCLE(SINGLE_CYCLE)
            ) u_pe (
                .clk(clk), .rst(rst), .ready(pe_ready[p]),
                .in_entry(entry[p*ENTRY_W +: ENTRY_W]), .in_write(entry_write[p]), .in_room(pe_room[p]),
                .done(done), .drained(drained), .busy(pe_busy[p]),
                .drain_read(drain_read), .drain_bank(drain_bank), .drain_addr(drain_addr), .sum(sum)
            );
            // a requantizer per PE: the layer's shift and clamp are the descriptor's, and the
            // drain reads all P PEs a cycle
            fg_requantize #(
                .W_BITS(W_BITS), .ACC_W(ACC_W), .SUM_W(SUM_W), .SCALE(SCALE), .SCALE_SHIFT(SCALE_SHIFT), .SHIFT_W(6)
            ) u_requantize (
                .clk(clk), .sum(sum), .bias(bias_row[p*ACC_W +: ACC_W]), .cfg_shift(d_shift), .cfg_lo(d_lo),
                .cfg_hi(d_hi), .y(y[p*VALUE_W +: VALUE_W])
            );
        end
    endgenerate
    fg_all #(.N(P)) u_ready (.clk(clk), .in(pe_ready), .out(run));
    fg_all #(.N(P)) u_ok (.clk(clk), .in(pe_room), .out(ok));
    fg_all #(.N(P)) u_whole0 (.clk(clk), .in(done0), .out(whole0));
    fg_all #(.N(P)) u_whole1 (.clk(clk), .in(done1), .out(whole1));

    // ---- drain -------------------------------------------------------------------------------------------
    wire word_room;
    wire room = (DENSE != 0 && last_layer) ? dense_room : word_room;
    reg issuing;
    reg [LOCAL_W-1:0] next_addr;
    wire issue = state == S_DRAIN && issuing && room;
    reg [BIAS_AW-1:0] bias_addr;
    reg [DRAIN_LATENCY-1:0] in_flight, flight_last;
    reg [DRAIN_LATENCY*LOCAL_W-1:0] flight_addr;
    wire y_valid = in_flight[DRAIN_LATENCY-1];
    wire y_last = flight_last[DRAIN_LATENCY-1];
    wire [LOCAL_W-1:0] y_addr = flight_addr[(DRAIN_LATENCY-1)*LOCAL_W +: LOCAL_W];
    wire finish;
    fg_table #(.WIDTH(P * ACC_W), .DEPTH(BIAS_ROWS), .STYLE(BIAS_STYLE)) u_bias (
        .clk(clk), .we(bias_write), .waddr(bias_waddr), .wdata(bias_fill),
        .en(drain_read), .addr(bias_addr), .data(bias_row)
    );
    always @(posedge clk) begin
        if (rst) begin
            drain_read <= 1'b0;
            in_flight <= {DRAIN_LATENCY{1'b0}};
        end else begin
            drain_read <= issue;
            in_flight <= {in_flight[DRAIN_LATENCY-2:0], issue};
        end
        drain_bank <= bank;
        drain_addr <= next_addr;
        bias_addr <= d_bias_base + {{(BIAS_AW - LOCAL_W > 0 ? BIAS_AW - LOCAL_W : 0){1'b0}}, next_addr};
        flight_last <= {flight_last[DRAIN_LATENCY-2:0], issue && next_addr == d_last_address};
        flight_addr <= {flight_addr[(DRAIN_LATENCY-1)*LOCAL_W-1:0], next_addr};
    end

    wire [P-1:0] exists;
    generate
        for (p = 0; p < P; p = p + 1) begin : g_exists
            assign exists[p] = (y_addr != d_last_address) || (p < d_last_outputs);
        end
    endgenerate

    // The drained words: W1 values and nonzero outputs, W2 their count; a word only where one is
    // nonzero (fg_stage.v); the end word after the last.
    // A stage whose only layer drains dense beats serializes nothing: W2's word goes unused.
    reg w1_valid, w1_last, w2_valid, w2_last, end_word;
    reg [LOCAL_W-1:0] w1_addr;
    reg [P-1:0] w1_mask;
    reg [P*VALUE_W-1:0] w1_values;
    reg [COUNT_W-1:0] count;
    /* verilator lint_off UNUSEDSIGNAL */
    reg [LOCAL_W-1:0] w2_addr;
    reg [P-1:0] w2_mask;
    reg [P*VALUE_W-1:0] w2_values;
    reg [COUNT_W-1:0] w2_count;
    reg w2_some;                        // an output at W2's address is nonzero (fg_stage.v)
    /* verilator lint_on UNUSEDSIGNAL */
    wire dense_out = DENSE != 0 && last_layer;
    integer b;
    always @(*) begin
        count = {COUNT_W{1'b0}};
        for (b = 0; b < P; b = b + 1) count = count + w1_mask[b];
    end
    always @(posedge clk) begin
        w1_valid <= !rst && y_valid && !dense_out;
        w1_last <= y_last;
        w1_addr <= y_addr;
        w1_values <= y;
        for (q = 0; q < P; q = q + 1) begin
            w1_mask[q] <= exists[q] && y[q*VALUE_W +: VALUE_W] != {VALUE_W{1'b0}};
        end
        w2_valid <= !rst && w1_valid;
        w2_last <= w1_last;
        w2_addr <= w1_addr;
        w2_mask <= w1_mask;
        w2_values <= w1_values;
        w2_count <= count;
        w2_some <= |w1_mask;
        end_word <= !rst && w2_valid && w2_last;
    end
    fg_dense #(
        .P(P), .VALUE_W(VALUE_W), .ADDR_W(LOCAL_W), .ROTATED(ROTATED), .ROT_W(ROT_W),
        .ADDRESSES(ROTATED_ADDRESSES), .ROTATIONS(ROTATIONS)
    ) u_dense (
        .clk(clk), .rst(rst), .valid(y_valid && dense_out), .last(y_last), .addr(y_addr), .exists(exists), .y(y),
        .dense_valid(dense_valid), .dense_last(dense_last), .dense_data(dense_data)
    );
    assign finish = dense_out ? (dense_valid && dense_last) : end_word;

    // One serializer for the loop-back FIFO and the output channel: the layer it serves says which.
    // Its items stay with the layer that drained them (a drain starts only after the end item of
    // the pass before). A stage whose only layer drains dense beats has none.
    generate
        if (DENSE == 0 || LAYERS > 1) begin : g_serialize
            // an end word is its flag, the rest whatever W2 holds (fg_stage.v)
            wire [WORD_W-1:0] word = {end_word, w2_addr, w2_count, w2_mask, w2_values};
            wire [WORD_W-1:0] head;
            wire head_valid, head_pop;
            /* verilator lint_off PINCONNECTEMPTY */
            fg_fifo #(.WIDTH(WORD_W), .DEPTH(WORD_FIFO_DEPTH), .SLACK(DRAIN_SLACK), .STYLE(WORD_FIFO_STYLE)) u_words (
                .clk(clk), .rst(rst),
                .in_data(word), .in_valid((w2_valid && w2_some) || end_word), .in_ready(), .room(word_room),
                .out_data(head), .out_valid(head_valid), .out_ready(head_pop)
            );
            /* verilator lint_on PINCONNECTEMPTY */
            fg_serializer #(
                .G(P), .GB(GB), .COUNT_W(COUNT_W), .BASE_W(LOCAL_W), .OFFSET(0), .STRIDE(P), .IDX_W(DR_IDX_W)
            ) u_serializer (
                .clk(clk), .rst(rst),
                .word(head), .word_valid(head_valid), .word_pop(head_pop),
                .item(drained_item), .item_valid(drained_valid), .room(serial_last ? out_room : loop_room)
            );
        end else begin : g_dense_only
            assign word_room = 1'b1;
            assign drained_item = {DR_ITEM_W{1'b0}};
            assign drained_valid = 1'b0;
        end
    endgenerate
    assign out_item = {drained_item[DR_ITEM_W-1], drained_item[VALUE_W +: OUT_IDX_W], drained_item[VALUE_W-1:0]};
    assign out_valid = drained_valid && serial_last;
    // The next pass starts as soon as a drain has its words: it looks up the loop-back items while
    // the serializer still emits them, and its end comes after theirs. Only a drain waits for the
    // serializer to be done with the pass before: `serial_last` routes the items of one pass.
    reg passing;                        // the drained words of the pass before are still being serialized
    wire end_serialized = drained_valid && drained_item[DR_ITEM_W-1];

    // ---- the sequence of passes ------------------------------------------------------------------------
    always @(posedge clk) begin
        if (rst) begin
            state <= S_LOAD;
            layer <= {LAYER_W{1'b0}};
            bank <= 1'b0;
            end_sent <= 1'b0;
            issuing <= 1'b0;
            drained <= 2'b00;
            passing <= 1'b0;
            serial_last <= 1'b0;
        end else begin
            drained <= 2'b00;
            case (state)
                S_LOAD: if (fill_wanted) state <= S_FILL;
                        else if (run && filled) state <= S_LOAD2;
                S_FILL: if (fill_done) state <= S_LOAD;
                S_LOAD2: state <= S_LOAD3;
                S_LOAD3: begin
                    // the descriptor: n_out, addresses, row_base, bias_base, dram (2 words), shift, {hi, lo}
                    d_last_address <= desc[32 +: LOCAL_W] - 1'b1;
                    d_row_base <= desc[64 +: ROW_AW];
                    d_bias_base <= desc[96 +: BIAS_AW];
                    d_shift <= desc[192 +: 6];
                    d_lo <= desc[224 +: VALUE_W];
                    d_hi <= desc[240 +: VALUE_W];
                    d_last_outputs <= desc[0 +: 32] - ((desc[32 +: 32] - 32'd1) << PB);
                    state <= S_COMPUTE;
                    end_sent <= 1'b0;
                end
                S_COMPUTE: if (send_end) begin
                    end_sent <= 1'b1;
                    state <= S_DONE;
                end else if (fill_wanted && first_layer && !taken_end) begin
                    // A batch starts while the first pass waits for its first activation (none can
                    // be on its way: the stages before are idle): load the tables first, and take
                    // the descriptor again, for the weights' new address.
                    state <= S_LOAD;
                end
                S_DONE: if ((bank ? whole1 : whole0) && !passing) begin
                    state <= S_DRAIN;
                    serial_last <= last_layer;
                    issuing <= 1'b1;
                    next_addr <= {LOCAL_W{1'b0}};
                end
                default: begin  // S_DRAIN
                    if (issue) begin
                        next_addr <= next_addr + 1'b1;
                        if (next_addr == d_last_address) issuing <= 1'b0;
                    end
                    if (finish) begin
                        state <= S_LOAD;
                        drained[bank] <= 1'b1;
                        bank <= !bank;
                        passing <= !dense_out;
                        layer <= last_layer ? {LAYER_W{1'b0}} : layer + 1'b1;
                    end
                end
            endcase
            if (end_serialized) passing <= 1'b0;
        end
    end

    // ---- performance counters (per layer) -------------------------------------------------------------
    // A pass's compute cycles: while it has activations or beats to handle (memory waits
    // included), not while its first layer waits for activations from the stage before.
    wire working = item_valid || l1_valid || l2_valid || l3_valid || l4_valid || req_push || (|q_valid)
                   || act_valid || !reader_idle || (|pe_busy);
    always @(posedge clk) begin
        if (rst) begin
            perf_busy <= {(32 * LAYERS){1'b0}};
            perf_drain <= {(32 * LAYERS){1'b0}};
            perf_vectors <= 32'd0;
        end else begin
            if (computing && working) perf_busy[layer*32 +: 32] <= perf_busy[layer*32 +: 32] + 32'd1;
            if (state == S_DRAIN && (!issuing || room)) perf_drain[layer*32 +: 32] <= perf_drain[layer*32 +: 32] + 32'd1;
            if (finish && last_layer) perf_vectors <= perf_vectors + 32'd1;
        end
    end
endmodule
