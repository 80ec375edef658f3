// A dataflow stage (docs/engine.md): one layer on P PEs with its weights on chip, in ROM or, with
// LOADED, in UltraRAM that the load phase fills at a batch's start (the stage's link of the load
// chain: it keeps the first BEATS beats, a weight row each, and passes the rest on; its units
// start when its last row is in).
//
// merger -> K issue units (row table and weight ROM ports) -> a FIFO per unit at every PE -> P PEs,
// each at its own pace, into two banks -> drain (requantize) -> K serializers into the output
// channel, or dense beats for the model's last layer. Vector v fills bank v mod 2 while the drain
// empties the other one. Wide flags (every PE FIFO has room, every PE is done with a bank) are
// registered ANDs (fg_all); the drain issues an address only when every output FIFO has room for
// all the words in flight.
//
// With PRIVATE (docs/engine.md, "Private PEs") each unit has P PEs of its own, K x P in all, and
// no PE has a FIFO (fg_pe.v, FIFO_DEPTH = 0): the entry unit u makes for lane p goes to PE (u, p)
// alone, which holds a partial sum of every output of lane p. A unit's `ok` is always high (no
// FIFO to fill), but it still waits for `run` and for a free bank; a bank is whole when all K x P
// PEs are done with it. The drain reads an address of every PE, and lane p's sum is the sum of the
// K PEs (u, p), added in a tree with a register a level (no K-input adder in one cycle): log2 K
// cycles more from the read to the requantizer, which the bias read and the words in flight
// follow. Integer sums are order-free: the outputs are the shared PEs'.
//
// Drain lanes (docs/engine.md, "Drain lanes"): the drain requantizes D = P / STEPS lanes a cycle.
// It reads a local address of one group of D PEs at a time, group s the PEs s*D .. s*D + D - 1:
// drain row r = address * STEPS + s holds outputs r*D .. r*D + D - 1. The groups' sums meet in a
// registered STEPS:1 multiplexer a lane (before a private stage's adder tree), one cycle more; D
// requantizers instead of P, and serializer words of D / K values. STEPS = 1: all P at once.
//
// Quiet vectors (QUIET; docs/engine.md): when every output of the layer is zero without input, a
// vector none of whose beats reached this stage's PEs (no unit's `touched` for its bank) leaves its
// bank empty, and the drain writes its end words alone instead of reading every row. A vector
// without any activation (an empty vector) does not even take a bank: the merger deals it to no
// unit and notes its place in the order of vectors (ORDER_DEPTH of them in flight), and the drain
// writes its end words when its turn comes, between the banks' vectors. So the vector after it
// computes while the one before drains, instead of waiting behind both drains. The model's last
// layer (DENSE) drains a bank's rows whatever reached it, but lets an empty vector pass its banks
// too: in its turn the drain writes its beats, all zeros, without reading a bank.
module fg_stage #(
    parameter integer S = 1,            // sub-channels of the input channel
    parameter integer K = 1,            // issue units; also the sub-channels of the output channel
    parameter integer P = 1,
    parameter integer D = 1,            // drain lanes: P / STEPS, a multiple of K
    parameter integer STEP_W = 0,       // log2(STEPS): 0 .. 3
    parameter integer G = 1,            // lanes per output group: D / K
    parameter integer GB = 1,           // max(1, log2(G))
    parameter integer COUNT_W = 1,      // bits holding 0..G
    parameter integer IN_IDX_W = 1,
    parameter integer OUT_IDX_W = 1,
    parameter integer N_IN = 1,
    parameter integer N_OUT = 1,
    parameter integer ADDRESSES = 1,
    parameter integer LOCAL_W = 1,
    parameter integer ROWS_W = 1,       // a drain row's number: bits of ADDRESSES * STEPS - 1
    parameter integer BEATS = 1,
    parameter integer START_W = 1,
    parameter integer CNT_W = 1,
    parameter integer W_BITS = 8,       // 0: positions only (the PEs' SCALE and SCALE_SHIFT)
    parameter integer CB_W = 0,         // > 0: W_BITS is an index into the PEs' CODEBOOK
    parameter [((CB_W > 0) ? (CB_W << W_BITS) : 1) - 1:0] CODEBOOK = 0,
    parameter integer ACC_W = 32,
    parameter integer SUM_W = ACC_W,
    parameter integer BIAS_ROWS = 1,    // drain rows, or 1 when every output's bias is one value (a constant)
    parameter integer SCALE = 1,
    parameter integer SCALE_SHIFT = 0,
    parameter integer SHIFT = 0,
    parameter integer LO = -32768,
    parameter integer HI = 32767,
    parameter integer DENSE = 0,        // the model's last layer: dense beats out
    parameter integer ROTATED = 0,      // ... its outputs rotated over the PEs, r_a an address (fg_dense.v)
    parameter integer ROT_W = 1,
    parameter [ADDRESSES*ROT_W-1:0] ROTATIONS = 0,
    parameter integer LOADED = 0,       // the weights are in UltraRAM, loaded through the load chain
    parameter integer STACKED = 0,      // the PEs' two banks in one memory: the drain takes a MAC slot
    parameter integer PRIVATE = 0,      // each unit has P PEs of its own, without FIFOs (K = 1, 2, 4; not STACKED)
    parameter integer QUIET = 0,        // every output is zero without input: an empty vector passes the banks, and
                                        // (not DENSE) a vector with no beat drains end words alone
    parameter integer LOAD_W = 1,       // the load chain's beats
    parameter integer PE_FIFO_DEPTH = 32,
    parameter integer PE_SLACK = 8,
    parameter integer ITEM_FIFO_DEPTH = 8,
    parameter integer ORDER_DEPTH = 16, // vectors between the merger and the drain (QUIET)
    parameter integer ITEM_SLACK = 3,    // the merger's decide register and the flag's own register
    parameter integer ROW_FIFO_DEPTH = 8,
    parameter integer WORD_FIFO_DEPTH = 32,
    parameter integer DRAIN_SLACK = 13,  // words in flight: DRAIN_LATENCY to y, two word registers, the end word, the flag's register
    parameter ROWS_FILE = "",
    parameter WEIGHTS_FILE = "",
    parameter BIAS_FILE = "",
    parameter ROWS_STYLE = "block",     // memory kinds, as the engine plan chose them
    parameter WEIGHTS_STYLE = "block",
    parameter BIAS_STYLE = "block",
    parameter ACC_STYLE = "distributed",
    parameter integer SINGLE_CYCLE = 0, // the PEs' one-cycle read-modify-write (fg_pe.v)
    parameter PE_FIFO_STYLE = "distributed",
    parameter ITEM_FIFO_STYLE = "distributed",
    parameter ROW_FIFO_STYLE = "distributed",
    parameter WORD_FIFO_STYLE = "distributed"
) (
    input  wire                     clk,
    input  wire                     rst,
    // the load chain (LOADED): a batch starts; beats in, and those after this stage's rows out
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire                     load_start,
    input  wire [LOAD_W-1:0]        load_data,      // a row in the low P * SLOT_W bits
    input  wire                     load_valid,
    /* verilator lint_on UNUSEDSIGNAL */
    output reg  [LOAD_W-1:0]        load_out_data,
    output reg                      load_out_valid,
    input  wire [S*IN_ITEM_W-1:0]   in_item,
    input  wire [S-1:0]             in_valid,
    output wire [S-1:0]             in_pop,
    output wire [K*OUT_ITEM_W-1:0]  out_item,
    output wire [K-1:0]             out_valid,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [K-1:0]             out_room,       // registered, slack for the serializers' register (unused: dense)
    /* verilator lint_on UNUSEDSIGNAL */
    output wire [P*VALUE_W-1:0]     dense_data,     // D = P
    output wire                     dense_last,
    output wire                     dense_valid,
    input  wire                     dense_room,     // registered, DRAIN_SLACK free
    output reg  [31:0]              perf_busy,      // cycles with work in the units or the PEs
    output reg  [31:0]              perf_drain,     // drain cycles, waits for output room excluded
    output reg  [31:0]              perf_vectors
);
    localparam integer VALUE_W = 16;  // activations travel as 16-bit values (docs/engine.md)
    localparam integer IN_ITEM_W = 1 + IN_IDX_W + VALUE_W;
    localparam integer OUT_ITEM_W = 1 + OUT_IDX_W + VALUE_W;
    localparam integer SLOT_W = 1 + LOCAL_W + W_BITS;
    localparam integer ENTRY_W = LOCAL_W + W_BITS + VALUE_W;  // {local, weight, x} (fg_pe.v)
    localparam integer ROW_AW = (N_IN > 1) ? $clog2(N_IN) : 1;
    localparam integer BEAT_AW = (BEATS > 1) ? $clog2(BEATS) : 1;
    localparam integer ROW_W = START_W + CNT_W;
    localparam integer ROM_COPIES = (K + 1) / 2;   // a block RAM has two ports
    localparam integer WORD_W = 1 + ROWS_W + COUNT_W + G + G * VALUE_W;
    // private PEs: K x P of them, and the levels of the drain's adder tree (K a power of two)
    localparam integer PES = (PRIVATE != 0) ? K * P : P;
    localparam integer LEVELS = (PRIVATE != 0 && K > 1) ? $clog2(K) : 0;
    localparam integer STEPS = 1 << STEP_W;
    localparam integer MUXED = (STEPS > 1) ? 1 : 0;   // the groups' multiplexer register
    // row decided -> y at the PEs; stacked banks read a cycle later, in the MAC pipeline's slot;
    // the groups' multiplexer takes a cycle, private PEs' sums pass the adder tree, a cycle a level.
    // DRAIN_SLACK covers DRAIN_LATENCY + 4 words: 10, 11 stacked, 13 private at K = 4 with drain
    // lanes (none to spare).
    localparam integer DRAIN_LATENCY = 6 + STACKED + MUXED + LEVELS;
    // a drain row {local address, group}: the PEs' address in its high bits
    localparam integer ROW_BITS = LOCAL_W + STEP_W;
    localparam [31:0] LAST_ROW32 = ADDRESSES * STEPS - 1;
    localparam [ROW_BITS-1:0] LAST_ROW = LAST_ROW32[ROW_BITS-1:0];
    // rows before FULL_ROWS hold D outputs; row FULL_ROWS holds REM, and the rows after it none
    localparam [31:0] FULL_ROWS32 = N_OUT / D;
    localparam [ROW_BITS:0] FULL_ROWS = FULL_ROWS32[ROW_BITS:0];
    localparam integer REM = N_OUT % D;
    localparam [31:0] SHIFT32 = SHIFT;
    localparam [31:0] LO32 = LO;
    localparam [31:0] HI32 = HI;

    // ---- merger and the units' activation FIFOs ----------------------------------------------------
    wire [K*IN_ITEM_W-1:0] dealt;
    wire [K-1:0] dealt_valid, item_room;
    wire [K*IN_ITEM_W-1:0] item;
    wire [K-1:0] item_valid, item_pop;
    // The order of vectors (QUIET): a flag a vector, set for an empty one, read by the drain.
    /* verilator lint_off UNUSEDSIGNAL */
    wire vector_in, vector_empty;       // unused without QUIET, as is the drain's `order_pop`
    wire order_pop;
    /* verilator lint_on UNUSEDSIGNAL */
    wire order_room, order_valid, order_head;
    /* verilator lint_off PINCONNECTEMPTY */
    fg_merger #(.S(S), .K(K), .IDX_W(IN_IDX_W), .SKIP_EMPTY(QUIET)) u_merger (
        .clk(clk), .rst(rst), .enable(QUIET == 0 || order_room),
        .in_item(in_item), .in_valid(in_valid), .in_pop(in_pop),
        .out_item(dealt), .out_valid(dealt_valid), .out_room(item_room),
        .vector_in(vector_in), .vector_empty(vector_empty)
    );
    generate
        if (QUIET != 0) begin : g_order
            // a vector_in every other cycle at most: two free places cover the room flag's register
            fg_fifo #(.WIDTH(1), .DEPTH(ORDER_DEPTH), .SLACK(2), .STYLE("distributed")) u_order (
                .clk(clk), .rst(rst),
                .in_data(vector_empty), .in_valid(vector_in), .in_ready(), .room(order_room),
                .out_data(order_head), .out_valid(order_valid), .out_ready(order_pop)
            );
        end else begin : g_no_order
            assign order_room = 1'b1;
            assign order_valid = 1'b0;
            assign order_head = 1'b0;
        end
    endgenerate
    /* verilator lint_on PINCONNECTEMPTY */

    generate
        if (PRIVATE != 0 && ((K & (K - 1)) != 0 || STACKED != 0)) begin : g_invalid
            // an initial block (Yosys stops at it): older Icarus Verilog releases do not parse an elaboration $error
            initial begin
                $display("ERROR: fg_stage: private PEs take K = 1, 2 or 4 units (a power of two: the drain's adder tree) and two banks (STACKED = 0)");
                $finish;
            end
        end
        if (D * STEPS != P || D % K != 0 || (STEPS > 1 && (STACKED != 0 || DENSE != 0))) begin : g_invalid_drain
            initial begin
                $display("ERROR: fg_stage: drain lanes D = P / STEPS, a multiple of K; all P with stacked banks or dense beats");
                $finish;
            end
        end
    endgenerate

    // ---- PE readiness, units, ROMs -------------------------------------------------------------------
    // PE flags: PE p at p, or private PE (u, p) at u*P + p. fg_all's two stages stay two LUT levels
    // each up to 288 inputs (36 groups of 8), K x P = 256 at most.
    wire [PES-1:0] pe_ready;
    wire pes_ready;
    reg loaded;                         // every weight row is in (always, for a ROM)
    reg run;                            // the units may issue: the PEs are ready, the weights in
    fg_all #(.N(PES)) u_ready (.clk(clk), .in(pe_ready), .out(pes_ready));
    always @(posedge clk) run <= !rst && pes_ready && loaded;

    wire [K-1:0] row_en, beat_en;
    wire [K*ROW_AW-1:0] row_addr;
    wire [K*ROW_W-1:0] row_data;
    wire [K*BEAT_AW-1:0] beat_addr;
    wire [K*P*SLOT_W-1:0] beat_data;
    wire [K*P*ENTRY_W-1:0] entry;       // unit u's entries for its PEs
    wire [K*P-1:0] entry_write;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [P*K-1:0] pe_room;             // PE p's FIFO for unit u at p*K + u (always room: private PEs)
    /* verilator lint_on UNUSEDSIGNAL */
    wire [K-1:0] ok;
    wire [K-1:0] unit_working;
    wire [2*K-1:0] unit_touched;        // unit u's bank b at u*2 + b
    reg [1:0] drained_vectors;
    reg [1:0] drained;

    genvar u, c, p;
    generate
        for (u = 0; u < K; u = u + 1) begin : g_unit
            /* verilator lint_off PINCONNECTEMPTY */
            fg_fifo #(.WIDTH(IN_ITEM_W), .DEPTH(ITEM_FIFO_DEPTH), .SLACK(ITEM_SLACK), .STYLE(ITEM_FIFO_STYLE)) u_items (
                .clk(clk), .rst(rst),
                .in_data(dealt[u*IN_ITEM_W +: IN_ITEM_W]), .in_valid(dealt_valid[u]), .in_ready(),
                .room(item_room[u]),
                .out_data(item[u*IN_ITEM_W +: IN_ITEM_W]), .out_valid(item_valid[u]), .out_ready(item_pop[u])
            );
            fg_unit #(
                .P(P), .IDX_W(IN_IDX_W), .ROW_AW(ROW_AW), .START_W(START_W), .CNT_W(CNT_W), .BEAT_AW(BEAT_AW),
                .SLOT_W(SLOT_W), .LOCAL_W(LOCAL_W), .W_BITS(W_BITS), .ROW_FIFO_DEPTH(ROW_FIFO_DEPTH),
                .ROW_FIFO_STYLE(ROW_FIFO_STYLE)
            ) u_unit (
                .clk(clk), .rst(rst), .run(run),
                .item(item[u*IN_ITEM_W +: IN_ITEM_W]), .item_valid(item_valid[u]), .item_pop(item_pop[u]),
                .row_en(row_en[u]), .row_addr(row_addr[u*ROW_AW +: ROW_AW]), .row_data(row_data[u*ROW_W +: ROW_W]),
                .beat_en(beat_en[u]), .beat_addr(beat_addr[u*BEAT_AW +: BEAT_AW]),
                .beat_data(beat_data[u*P*SLOT_W +: P*SLOT_W]),
                .entry(entry[u*P*ENTRY_W +: P*ENTRY_W]), .entry_write(entry_write[u*P +: P]), .ok(ok[u]),
                .drained_vectors(drained_vectors), .drained(drained), .touched(unit_touched[u*2 +: 2]),
                .vector_issued(), .working(unit_working[u])
            );
            /* verilator lint_on PINCONNECTEMPTY */
            if (PRIVATE != 0) begin : g_own
                // The unit's own PEs take every entry the cycle it comes: no FIFO to fill.
                assign ok[u] = 1'b1;
            end else begin : g_shared
                // Every PE's FIFO of this unit has room.
                wire [P-1:0] rooms;
                for (p = 0; p < P; p = p + 1) begin : g_room
                    assign rooms[p] = pe_room[p*K + u];
                end
                fg_all #(.N(P)) u_ok (.clk(clk), .in(rooms), .out(ok[u]));
            end
        end
        for (c = 0; c < ROM_COPIES; c = c + 1) begin : g_rom
            localparam integer PORTS = (K - 2 * c) < 2 ? (K - 2 * c) : 2;
            fg_rom #(.WIDTH(ROW_W), .DEPTH(N_IN), .PORTS(PORTS), .STYLE(ROWS_STYLE), .INIT(ROWS_FILE)) u_rows (
                .clk(clk), .en(row_en[2*c +: PORTS]), .addr(row_addr[2*c*ROW_AW +: PORTS*ROW_AW]),
                .data(row_data[2*c*ROW_W +: PORTS*ROW_W])
            );
            if (LOADED == 0) begin : g_weights
                fg_rom #(.WIDTH(P * SLOT_W), .DEPTH(BEATS), .PORTS(PORTS), .STYLE(WEIGHTS_STYLE), .INIT(WEIGHTS_FILE))
                    u_weights (
                    .clk(clk), .en(beat_en[2*c +: PORTS]), .addr(beat_addr[2*c*BEAT_AW +: PORTS*BEAT_AW]),
                    .data(beat_data[2*c*P*SLOT_W +: PORTS*P*SLOT_W])
                );
            end
        end
    endgenerate

    // ---- the load phase (LOADED): the first BEATS beats of the chain are this stage's rows ---------
    localparam [31:0] LAST_BEAT32 = BEATS - 1;
    generate
        if (LOADED != 0) begin : g_loaded
            reg [BEAT_AW-1:0] load_next;    // the row the next beat holds
            reg load_write;
            reg [BEAT_AW-1:0] load_addr;
            reg [P*SLOT_W-1:0] load_row;
            always @(posedge clk) begin
                if (rst || load_start) begin
                    loaded <= 1'b0;
                    load_next <= {BEAT_AW{1'b0}};
                end else if (load_valid && !loaded) begin
                    load_next <= load_next + 1'b1;
                    if (load_next == LAST_BEAT32[BEAT_AW-1:0]) loaded <= 1'b1;
                end
                load_write <= !rst && load_valid && !loaded;
                load_addr <= load_next;
                load_row <= load_data[P*SLOT_W-1:0];
                load_out_valid <= !rst && load_valid && loaded;
                load_out_data <= load_data;
            end
            // A copy per unit: the load writes through the block's other port.
            for (u = 0; u < K; u = u + 1) begin : g_copy
                fg_table #(.WIDTH(P * SLOT_W), .DEPTH(BEATS), .STYLE(WEIGHTS_STYLE)) u_weights (
                    .clk(clk), .we(load_write), .waddr(load_addr), .wdata(load_row),
                    .en(beat_en[u]), .addr(beat_addr[u*BEAT_AW +: BEAT_AW]), .data(beat_data[u*P*SLOT_W +: P*SLOT_W])
                );
            end
        end else begin : g_rom_weights
            always @(posedge clk) begin
                loaded <= 1'b1;
                load_out_valid <= 1'b0;
                load_out_data <= {LOAD_W{1'b0}};
            end
        end
    endgenerate

    // ---- PEs -------------------------------------------------------------------------------------------
    // PE i's sum at i*SUM_W: shared PE p at p, private PE (u, p) at u*P + p. Group s's PEs (lanes
    // s*D .. s*D + D - 1) read when the drain's row is theirs: `drain_reads[s]`.
    wire [2*PES-1:0] pe_done;           // PE i's bank b at i*2 + b
    wire [PES-1:0] pe_busy;
    wire [PES*SUM_W-1:0] pe_sum;
    wire [D*VALUE_W-1:0] y;
    reg drain_read;                     // the drain reads a row (the bias ROM's enable)
    reg [STEPS-1:0] drain_reads;        // ... of group s
    reg drain_bank;
    reg [LOCAL_W-1:0] drain_addr;
    /* verilator lint_off UNUSEDSIGNAL */
    reg [ROW_BITS-1:0] drain_row;       // the bias ROM's address (a constant ROM of one row reads none)
    /* verilator lint_on UNUSEDSIGNAL */
    reg [DRAIN_LATENCY*ROW_BITS-1:0] flight_row;  // the rows decided 1 .. DRAIN_LATENCY cycles ago
    wire [D*ACC_W-1:0] bias_row;
    genvar i, d;
    generate
        for (p = 0; p < P; p = p + 1) begin : g_pe
            if (PRIVATE == 0) begin : g_shared
                wire [K*ENTRY_W-1:0] in_entry;
                wire [K-1:0] in_write;
                for (u = 0; u < K; u = u + 1) begin : g_in
                    assign in_entry[u*ENTRY_W +: ENTRY_W] = entry[(u*P + p)*ENTRY_W +: ENTRY_W];
                    assign in_write[u] = entry_write[u*P + p];
                end
                fg_pe #(
                    .K(K), .LOCAL_W(LOCAL_W), .ADDRESSES(ADDRESSES), .W_BITS(W_BITS), .CB_W(CB_W), .CODEBOOK(CODEBOOK),
                    .SUM_W(SUM_W), .SCALE(SCALE), .SCALE_SHIFT(SCALE_SHIFT),
                    .FIFO_DEPTH(PE_FIFO_DEPTH), .SLACK(PE_SLACK), .FIFO_STYLE(PE_FIFO_STYLE), .ACC_STYLE(ACC_STYLE),
                    .SINGLE_CYCLE(SINGLE_CYCLE),
                    .STACKED(STACKED)
                ) u_pe (
                    .clk(clk), .rst(rst), .ready(pe_ready[p]),
                    .in_entry(in_entry), .in_write(in_write), .in_room(pe_room[p*K +: K]),
                    .done(pe_done[p*2 +: 2]), .drained(drained), .busy(pe_busy[p]),
                    .drain_read(drain_reads[p / D]), .drain_bank(drain_bank), .drain_addr(drain_addr),
                    .sum(pe_sum[p*SUM_W +: SUM_W])
                );
            end else begin : g_private
                // PE (u, p) takes unit u's entries for lane p.
                for (u = 0; u < K; u = u + 1) begin : g_copy
                    fg_pe #(
                        .K(1), .LOCAL_W(LOCAL_W), .ADDRESSES(ADDRESSES), .W_BITS(W_BITS), .CB_W(CB_W),
                        .CODEBOOK(CODEBOOK), .SUM_W(SUM_W), .SCALE(SCALE), .SCALE_SHIFT(SCALE_SHIFT),
                        .FIFO_DEPTH(0), .SLACK(PE_SLACK), .FIFO_STYLE(PE_FIFO_STYLE), .ACC_STYLE(ACC_STYLE),
                        .SINGLE_CYCLE(SINGLE_CYCLE),
                        .STACKED(0)
                    ) u_pe (
                        .clk(clk), .rst(rst), .ready(pe_ready[u*P + p]),
                        .in_entry(entry[(u*P + p)*ENTRY_W +: ENTRY_W]), .in_write(entry_write[u*P + p]),
                        .in_room(pe_room[p*K + u]),
                        .done(pe_done[(u*P + p)*2 +: 2]), .drained(drained), .busy(pe_busy[u*P + p]),
                        .drain_read(drain_reads[p / D]), .drain_bank(drain_bank), .drain_addr(drain_addr),
                        .sum(pe_sum[(u*P + p)*SUM_W +: SUM_W])
                    );
                end
            end
        end

        // The groups' sums a lane: PE s*D + d's (of each private unit) at the row's group, which
        // comes out of the PEs 2 cycles after the read (flight_row[2]: the row decided 3 cycles
        // ago), into a register.
        localparam integer COPIES = (PRIVATE != 0) ? K : 1;
        wire [COPIES*D*SUM_W-1:0] lane_sums;   // copy u's lane d at u*D + d
        for (u = 0; u < COPIES; u = u + 1) begin : g_lanes
            for (d = 0; d < D; d = d + 1) begin : g_lane
                if (STEPS == 1) begin : g_direct
                    assign lane_sums[(u*D + d)*SUM_W +: SUM_W] = pe_sum[(u*P + d)*SUM_W +: SUM_W];
                end else begin : g_muxed
                    wire [STEPS*SUM_W-1:0] groups_sums;   // group s's at s
                    for (i = 0; i < STEPS; i = i + 1) begin : g_group_sum
                        assign groups_sums[i*SUM_W +: SUM_W] = pe_sum[(u*P + i*D + d)*SUM_W +: SUM_W];
                    end
                    wire [SUM_W-1:0] picked;
                    fg_select #(.W(SUM_W), .SEL_W(STEP_W)) u_select (
                        .in(groups_sums), .sel(flight_row[2*ROW_BITS +: STEP_W]), .out(picked)
                    );
                    reg [SUM_W-1:0] chosen;
                    always @(posedge clk) chosen <= picked;
                    assign lane_sums[(u*D + d)*SUM_W +: SUM_W] = chosen;
                end
            end
        end

        for (d = 0; d < D; d = d + 1) begin : g_drain_lane
            wire [SUM_W-1:0] sum;           // lane d's
            if (COPIES == 1) begin : g_one
                assign sum = lane_sums[d*SUM_W +: SUM_W];
            end else begin : g_tree
                // The units' partial sums added: the tree's node n (1 .. 2K - 1) is the register of
                // the sum of nodes 2n and 2n + 1, and node K + u is unit u's sum: with K a power of
                // two every unit's sum passes log2 K registers to node 1.
                wire [2*K*SUM_W-1:SUM_W] node;
                for (u = 0; u < K; u = u + 1) begin : g_leaf
                    assign node[(K + u)*SUM_W +: SUM_W] = lane_sums[(u*D + d)*SUM_W +: SUM_W];
                end
                for (i = 1; i < K; i = i + 1) begin : g_add
                    reg [SUM_W-1:0] total;
                    always @(posedge clk) total <= node[2*i*SUM_W +: SUM_W] + node[(2*i + 1)*SUM_W +: SUM_W];
                    assign node[i*SUM_W +: SUM_W] = total;
                end
                assign sum = node[SUM_W +: SUM_W];
            end
            fg_requantize #(
                .W_BITS(W_BITS), .ACC_W(ACC_W), .SUM_W(SUM_W), .SCALE(SCALE), .SCALE_SHIFT(SCALE_SHIFT), .SHIFT_W(6)
            ) u_requantize (
                .clk(clk), .sum(sum), .bias(bias_row[d*ACC_W +: ACC_W]), .cfg_shift(SHIFT32[5:0]),
                .cfg_lo(LO32[VALUE_W-1:0]), .cfg_hi(HI32[VALUE_W-1:0]), .y(y[d*VALUE_W +: VALUE_W])
            );
        end
    endgenerate

    // A bank is whole when every PE is done with it.
    wire [PES-1:0] done0, done1;
    generate
        for (i = 0; i < PES; i = i + 1) begin : g_done
            assign done0[i] = pe_done[i*2];
            assign done1[i] = pe_done[i*2 + 1];
        end
    endgenerate
    wire whole0, whole1;
    fg_all #(.N(PES)) u_whole0 (.clk(clk), .in(done0), .out(whole0));
    fg_all #(.N(PES)) u_whole1 (.clk(clk), .in(done1), .out(whole1));

    // ---- drain -----------------------------------------------------------------------------------------
    wire [K-1:0] word_room;
    wire room = DENSE != 0 ? dense_room : &word_room;
    reg draining;                       // a bank is being drained
    reg issuing;                        // ... and rows are left to read
    /* verilator lint_off UNUSEDSIGNAL */
    reg quiet_end;                      // a quiet bank's or an empty vector's drain: its end words now (never: dense beats)
    /* verilator lint_on UNUSEDSIGNAL */
    reg skipping;                       // the drain writes an empty vector's end words (or zero beats): no bank to free
    reg [ROW_BITS-1:0] next_row;
    wire bank = drained_vectors[0];
    wire issue = issuing && room;
    wire finish;                        // the bank's last output (or end word) is written now
    // Whether any unit has issued a beat into a bank since its drain (a register: the units' flags
    // are set long before their vector's bank is whole).
    reg [1:0] touched, any_touched;
    integer t;
    always @(*) begin
        any_touched = 2'b00;
        for (t = 0; t < K; t = t + 1) any_touched = any_touched | unit_touched[t*2 +: 2];
    end
    always @(posedge clk) touched <= any_touched;
    wire quiet = QUIET != 0 && DENSE == 0 && !touched[bank];  // dense beats: a bank's rows, zeros or not
    // The drain's next vector (QUIET: in the order of vectors) is empty, or in a bank. Its flag
    // leaves the order FIFO the cycle after the decision (a register: the FIFO's pointers stay off
    // the decision's path); the drain decides again no sooner than two cycles later.
    wire next_empty = order_valid && order_head;
    wire next_banked = QUIET == 0 || (order_valid && !order_head);
    wire decide_empty = !draining && next_empty && room;
    wire bank_whole = !draining && next_banked && (bank ? whole1 : whole0);
    wire decide_bank = bank_whole && (!quiet || room);
    // a bank's rows (without room they wait for it at `issue`), or an empty vector's zero beats
    wire read_rows = (bank_whole && !quiet) || (DENSE != 0 && decide_empty);
    reg order_taken;
    always @(posedge clk) order_taken <= !rst && (decide_empty || decide_bank);
    assign order_pop = order_taken;
    // row decided (issue) -> broadcast -> y, with the row and its being the last
    reg [DRAIN_LATENCY-1:0] in_flight;
    reg [DRAIN_LATENCY-1:0] flight_last;
    wire y_valid = in_flight[DRAIN_LATENCY-1];
    wire y_last = flight_last[DRAIN_LATENCY-1];
    wire [ROW_BITS-1:0] y_row = flight_row[(DRAIN_LATENCY-1)*ROW_BITS +: ROW_BITS];

    // A bias table of one row is a constant: synthesis keeps no ROM. Its row (D biases a drain row)
    // meets the sum at the requantizers: read when the PEs read their bank, a cycle after the
    // drain's read with stacked banks or the groups' multiplexer, and a cycle later for each level
    // of private PEs' adder tree (its address delayed, not its D x ACC_W-bit row).
    localparam integer BIAS_AW = (BIAS_ROWS > 1) ? ROWS_W : 1;
    localparam integer BIAS_DELAY = STACKED + MUXED + LEVELS;
    wire [BIAS_AW-1:0] bias_index = (BIAS_ROWS > 1) ? drain_row[BIAS_AW-1:0] : {BIAS_AW{1'b0}};
    reg bias_read;
    reg [BIAS_AW-1:0] bias_addr;
    generate
        if (BIAS_DELAY == 1) begin : g_bias_late
            always @(posedge clk) begin
                bias_read <= drain_read;
                bias_addr <= bias_index;
            end
        end else if (BIAS_DELAY > 1) begin : g_bias_later
            reg [BIAS_DELAY-2:0] reads;
            reg [(BIAS_DELAY-1)*BIAS_AW-1:0] addrs;
            integer k;
            always @(posedge clk) begin
                reads[0] <= drain_read;
                addrs[0 +: BIAS_AW] <= bias_index;
                for (k = 1; k < BIAS_DELAY - 1; k = k + 1) begin
                    reads[k] <= reads[k-1];
                    addrs[k*BIAS_AW +: BIAS_AW] <= addrs[(k-1)*BIAS_AW +: BIAS_AW];
                end
                bias_read <= reads[BIAS_DELAY-2];
                bias_addr <= addrs[(BIAS_DELAY-2)*BIAS_AW +: BIAS_AW];
            end
        end else begin : g_bias_now
            always @(*) begin
                bias_read = drain_read;
                bias_addr = bias_index;
            end
        end
    endgenerate
    fg_rom #(.WIDTH(D * ACC_W), .DEPTH(BIAS_ROWS), .PORTS(1), .STYLE(BIAS_STYLE), .INIT(BIAS_FILE)) u_bias (
        .clk(clk), .en(bias_read), .addr(bias_addr), .data(bias_row)
    );

    always @(posedge clk) begin
        if (rst) begin
            drained_vectors <= 2'd0;
            draining <= 1'b0;
            issuing <= 1'b0;
            drain_read <= 1'b0;
            drained <= 2'b00;
            quiet_end <= 1'b0;
            skipping <= 1'b0;
            in_flight <= {DRAIN_LATENCY{1'b0}};
        end else begin
            drain_read <= issue;
            drained <= 2'b00;
            quiet_end <= 1'b0;
            in_flight <= {in_flight[DRAIN_LATENCY-2:0], issue};
            // an empty vector's or a quiet bank's end words, or a bank's rows
            if (decide_empty || decide_bank) draining <= 1'b1;
            if (decide_empty || (decide_bank && quiet)) quiet_end <= 1'b1;
            if (decide_empty) skipping <= 1'b1;
            if (read_rows) begin
                issuing <= 1'b1;
                next_row <= {ROW_BITS{1'b0}};
            end else if (issue) begin
                next_row <= next_row + 1'b1;
                if (next_row == LAST_ROW) issuing <= 1'b0;
            end
            if (finish) begin
                draining <= 1'b0;
                skipping <= 1'b0;
                if (!skipping) begin
                    drained[bank] <= 1'b1;
                    drained_vectors <= drained_vectors + 2'd1;
                end
            end
        end
        drain_bank <= bank;
        drain_addr <= next_row[ROW_BITS-1 -: LOCAL_W];
        drain_row <= next_row;
        flight_last <= {flight_last[DRAIN_LATENCY-2:0], issue && next_row == LAST_ROW};
        flight_row <= {flight_row[(DRAIN_LATENCY-1)*ROW_BITS-1:0], next_row};
    end

    // Group s's PEs read at rows whose low bits are s.
    generate
        if (STEPS == 1) begin : g_one_group
            always @(posedge clk) drain_reads <= !rst && issue && !skipping;  // an empty vector reads no bank
        end else begin : g_groups
            for (i = 0; i < STEPS; i = i + 1) begin : g_group
                localparam [31:0] GROUP = i;
                always @(posedge clk) drain_reads[i] <= !rst && issue && next_row[STEP_W-1:0] == GROUP[STEP_W-1:0];
            end
        end
    endgenerate

    // Outputs that exist: rows before FULL_ROWS all D of theirs, row FULL_ROWS its first REM.
    wire [D-1:0] exists;
    wire y_full;
    wire y_partial = {1'b0, y_row} == FULL_ROWS;
    generate
        if (FULL_ROWS32 == 0) begin : g_no_full_row
            assign y_full = 1'b0;
        end else begin : g_full_rows
            assign y_full = {1'b0, y_row} < FULL_ROWS;
        end
        for (d = 0; d < D; d = d + 1) begin : g_exists
            assign exists[d] = y_full || (y_partial && d < REM);
        end
    endgenerate

    generate
        if (DENSE != 0) begin : g_dense
            // The model's last layer: a beat of P values per address (D = P), zeros past the last output.
            fg_dense #(
                .P(P), .VALUE_W(VALUE_W), .ADDR_W(ROW_BITS), .ROTATED(ROTATED), .ROT_W(ROT_W),
                .ADDRESSES(ADDRESSES), .ROTATIONS(ROTATIONS)
            ) u_dense (
                .clk(clk), .rst(rst), .valid(y_valid), .last(y_last), .addr(y_row), .exists(exists & {D{!skipping}}), .y(y),
                .dense_valid(dense_valid), .dense_last(dense_last), .dense_data(dense_data)
            );
            assign finish = dense_valid && dense_last;
            assign word_room = {K{1'b1}};
            assign out_item = {(K * OUT_ITEM_W){1'b0}};
            assign out_valid = {K{1'b0}};
        end else begin : g_sparse
            // W1: the values and which are nonzero outputs; W2: per group the count of them too;
            // then into the group's word FIFO {end, row, count, mask, values}, unless none of
            // them is nonzero; after the last row's words, or for a quiet bank alone, an end word. A word without a
            // nonzero value would cost its serializer a cycle and take a place in the FIFO for
            // nothing: a vector that dies out at this layer (half of the Graph Challenge images
            // do) leaves only its end words, and the stage can run many such vectors ahead of
            // the next (docs/engine.md, "Deep channels").
            reg w1_valid, w1_last, w2_valid, w2_last, end_word;
            reg [ROWS_W-1:0] w1_row, w2_row;
            reg [D-1:0] w1_mask, w2_mask;
            reg [D*VALUE_W-1:0] w1_values, w2_values;
            integer q;
            always @(posedge clk) begin
                w1_valid <= !rst && y_valid;
                w1_last <= y_last;
                w1_row <= y_row[ROWS_W-1:0];
                w1_values <= y;
                for (q = 0; q < D; q = q + 1) begin
                    w1_mask[q] <= exists[q] && y[q*VALUE_W +: VALUE_W] != {VALUE_W{1'b0}};
                end
                w2_valid <= !rst && w1_valid;
                w2_last <= w1_last;
                w2_row <= w1_row;
                w2_mask <= w1_mask;
                w2_values <= w1_values;
                end_word <= !rst && ((w2_valid && w2_last) || quiet_end);
            end
            assign finish = end_word;
            assign dense_valid = 1'b0;
            assign dense_last = 1'b0;
            assign dense_data = {(P * VALUE_W){1'b0}};
            for (c = 0; c < K; c = c + 1) begin : g_group
                reg [COUNT_W-1:0] count, w2_count;
                reg w2_some;                // the group has a nonzero output at W2's row
                integer b;
                always @(*) begin
                    count = {COUNT_W{1'b0}};
                    for (b = 0; b < G; b = b + 1) count = count + w1_mask[c*G + b];
                end
                always @(posedge clk) begin
                    w2_count <= count;
                    w2_some <= |w1_mask[c*G +: G];
                end
                // An end word is its flag: the serializer reads nothing else of it, so the rest is
                // whatever W2 holds, and no multiplexer (a LUT a bit) clears it.
                wire [WORD_W-1:0] word = {end_word, w2_row, w2_count, w2_mask[c*G +: G], w2_values[c*G*VALUE_W +: G*VALUE_W]};
                wire [WORD_W-1:0] head;
                wire head_valid, head_pop;
                /* verilator lint_off PINCONNECTEMPTY */
                fg_fifo #(.WIDTH(WORD_W), .DEPTH(WORD_FIFO_DEPTH), .SLACK(DRAIN_SLACK), .STYLE(WORD_FIFO_STYLE))
                    u_words (
                    .clk(clk), .rst(rst),
                    .in_data(word), .in_valid((w2_valid && w2_some) || end_word), .in_ready(), .room(word_room[c]),
                    .out_data(head), .out_valid(head_valid), .out_ready(head_pop)
                );
                /* verilator lint_on PINCONNECTEMPTY */
                fg_serializer #(
                    .G(G), .GB(GB), .COUNT_W(COUNT_W), .BASE_W(ROWS_W), .OFFSET(c * G), .STRIDE(D),
                    .IDX_W(OUT_IDX_W)
                ) u_serializer (
                    .clk(clk), .rst(rst),
                    .word(head), .word_valid(head_valid), .word_pop(head_pop),
                    .item(out_item[c*OUT_ITEM_W +: OUT_ITEM_W]), .item_valid(out_valid[c]), .room(out_room[c])
                );
            end
        end
    endgenerate

    // ---- performance counters ----------------------------------------------------------------------
    // A vector's compute cycles: the units issue or the PEs work (with stacked banks, a drain's read
    // in a PE's slot is its work too); cycles when both only wait (for activations from the stage
    // before, or for a bank the drain has not emptied) are the pipeline's, not this layer's.
    // Private PEs' busy flags, up to 256, are ORed a unit at a time into registers, the units'
    // working flags beside them: the same count, a cycle late.
    wire working;
    generate
        if (PRIVATE != 0) begin : g_working_late
            reg [K-1:0] units_busy;
            reg units_working;
            integer q;
            always @(posedge clk) begin
                for (q = 0; q < K; q = q + 1) units_busy[q] <= !rst && (|pe_busy[q*P +: P]);
                units_working <= !rst && (|unit_working);
            end
            assign working = units_working || (|units_busy);
        end else begin : g_working_now
            wire pes_drain = STACKED != 0 && drain_read;
            assign working = (|unit_working) || (|pe_busy) || pes_drain;
        end
    endgenerate
    always @(posedge clk) begin
        if (rst) begin
            perf_busy <= 32'd0;
            perf_drain <= 32'd0;
            perf_vectors <= 32'd0;
        end else begin
            if (working) perf_busy <= perf_busy + 32'd1;
            if (draining && (!issuing || room)) perf_drain <= perf_drain + 32'd1;
            if (finish) perf_vectors <= perf_vectors + 32'd1;
        end
    end
endmodule
