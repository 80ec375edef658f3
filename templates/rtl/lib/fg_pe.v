// One processing element (docs/engine.md, "Processing elements"): it owns the outputs of one
// column of the relabelled layer and works at its own pace. Each issue unit writes it entries
// {local, weight, x} through a FIFO of its own; the PE takes one entry per cycle, the oldest
// vector's first, multiplies, and adds into accumulator `local` of its bank. Entries are
// order-free (integer sums), so nothing but the FIFOs is shared with the other PEs.
//
// A private PE (FIFO_DEPTH = 0, fg_stage.v's PRIVATE) has no FIFO: its stage gives each unit P PEs
// of its own, so one unit writes it, at most one entry a cycle, and its two banks are two
// memories, so the MAC pipeline takes an entry every cycle and never stalls. The unit's entry
// register is the head, taken the cycle it holds an entry (E1 the next), and `in_room` is always
// high. It is the K = 1 PE without its FIFO: only K = 1 and STACKED = 0 make one (any other
// combination stops synthesis, or a simulation at its start).
//
// An entry carries neither its bank nor an end flag (docs/engine.md, "Processing elements"): only nonzero
// activations are issued, so x = 0 marks an end entry, and a unit's vectors alternate between the
// banks, so the PE knows each entry's bank from the end entries it has seen. Two bits fewer an
// entry: 21 instead of 23 bits for a Graph Challenge layer at 32 to 60 PEs, three columns of LUT
// RAM a FIFO instead of four.
//
// With CB_W > 0 (a codebook, docs/engine.md "Weight encodings") an entry's W_BITS-bit field is an
// index into CODEBOOK, the layer's weights as CB_W-bit constants, and the PE multiplies by the one it
// names. With W_BITS = 0 (positions only) entries carry no weight; the
// layer's one weight is SCALE. When |SCALE| = 2^SCALE_SHIFT the PE adds x, and the drain shifts
// the sum (subtracting it for a negative SCALE): no multiplier. Otherwise (SCALE_SHIFT = -1) the
// PE multiplies x by the constant SCALE in its product register, as it would by a weight.
//
// MAC pipeline (never stalls): E1 entry -> E2 product register (a codebook PE's E2 holds the
// weight it looked up and x instead, multiplied on the way to E3), then the accumulator's
// read-modify-write, in one of two ways (docs/engine.md, "Processing elements"):
// - SINGLE_CYCLE (banks in LUT RAM, up to 64 addresses, and no multiplier): read at E2 (a LUT RAM
//   reads without a clock), add, write at the end of E2: no sum is in flight, so none is
//   forwarded. A word carries a valid bit; the drain reads an address and marks it empty in one
//   cycle;
// - pipelined (banks in block RAM, read with a clock; or a PE that multiplies, where an adder a
//   bank costs more LUTs than the forwarding): E2 the accumulator read -> E3 the read's output
//   register; sum -> E4 write. A read can miss the three writes ahead of it, so their sums are
//   forwarded (the matches are found one stage early and registered); the drain's read of an
//   address is followed by a write of zero.
//
// An end entry marks the end of a vector on its FIFO; when all K have passed the pipeline, the
// bank is `done` until the drain, which reads every local address of it: the PE gives the sum
// two cycles after the read (three with STACKED), and the stage's requantizer for this PE
// (fg_requantize.v) takes it from there.
//
// After reset the PE clears both banks, one address per cycle, and is `ready` when done: a reset
// in the middle of a batch leaves no partial sum behind.
//
// With STACKED (docs/engine.md, "Stacked banks") both banks are one memory, the bank its top
// address bit: one block RAM where two would each be half empty. Its one read and one write port
// are the MAC's every cycle, so the drain's read takes a slot of the MAC pipeline: while
// `drain_read` is high the PE takes no entry, and the drain's address goes down the pipeline in
// that entry's place, read at E1, its sum out at E3, a zero written at E4: a cycle later than with
// two banks.
module fg_pe #(
    parameter integer K = 1,            // issue units, one FIFO each
    parameter integer LOCAL_W = 1,
    parameter integer ADDRESSES = 1,
    parameter integer W_BITS = 8,       // 0: positions only
    parameter integer CB_W = 0,         // a codebook's values (0: the entry's field is the weight)
    parameter [((CB_W > 0) ? (CB_W << W_BITS) : 1) - 1:0] CODEBOOK = 0,  // value i at [i*CB_W +: CB_W]
    parameter integer SUM_W = 32,       // the accumulators
    parameter integer SCALE = 1,        // positions only: the layer's one weight
    parameter integer SCALE_SHIFT = 0,  // log2 |SCALE|, or -1 when |SCALE| is no power of two
    parameter integer FIFO_DEPTH = 32,  // 0: no FIFO, the entry straight into E1 (K = 1, STACKED = 0)
    parameter integer SLACK = 8,        // entries a unit may write before it sees `room` fall
    parameter FIFO_STYLE = "distributed",
    parameter ACC_STYLE = "distributed",
    parameter integer STACKED = 0,      // both banks in one memory (the drain takes the MAC's slot)
    parameter integer SINGLE_CYCLE = 0  // banks in LUT RAM and no multiplier: a one-cycle read-modify-write
) (
    input  wire                     clk,
    input  wire                     rst,
    output reg                      ready,          // the banks are clear
    // entries, one FIFO per unit (or, without FIFOs, the one unit's entry register)
    input  wire [K*ENTRY_W-1:0]     in_entry,
    input  wire [K-1:0]             in_write,
    output wire [K-1:0]             in_room,        // always high without FIFOs
    output reg  [1:0]               done,           // bank b holds a whole vector
    input  wire [1:0]               drained,        // the drain has emptied bank b: start counting again
    output wire                     busy,           // entries waiting or in the pipeline
    // drain: read and clear `drain_addr` of `drain_bank`; its sum comes 2 cycles later (3 STACKED)
    input  wire                     drain_read,
    input  wire                     drain_bank,
    input  wire [LOCAL_W-1:0]       drain_addr,
    output wire [SUM_W-1:0]         sum
);
    localparam integer VALUE_W = 16;  // activations travel as 16-bit values (docs/engine.md)
    localparam integer MULTIPLIER_W = (CB_W > 0) ? CB_W : W_BITS;  // what x is multiplied by
    localparam integer ENTRY_W = LOCAL_W + W_BITS + VALUE_W;  // {local, weight, x}; x = 0: an end entry
    localparam integer SCALE_W = 32;    // SCALE as a signed parameter
    // x times its weight; x alone, or x times the constant SCALE, when positions only
    localparam integer PROD_W = (W_BITS > 0) ? VALUE_W + MULTIPLIER_W : (SCALE_SHIFT < 0) ? VALUE_W + SCALE_W : VALUE_W;
    localparam integer KB = (K > 1) ? $clog2(K + 1) : 1;
    // the words of a bank, or of both banks in one memory (STACKED, the bank the top address bit)
    localparam integer CLEAR_W = (STACKED != 0) ? LOCAL_W + 1 : LOCAL_W;
    localparam [31:0] LAST_CLEAR32 = (STACKED != 0) ? (2 << LOCAL_W) - 1 : ADDRESSES - 1;
    localparam [CLEAR_W-1:0] LAST_CLEAR = LAST_CLEAR32[CLEAR_W-1:0];
    localparam [31:0] ALL_ENDS32 = K;
    localparam [KB-1:0] ALL_ENDS = ALL_ENDS32[KB-1:0];

    // ---- input FIFOs and the choice of the next entry -------------------------------------------
    wire [K*ENTRY_W-1:0] head;
    wire [K-1:0] head_valid;
    reg [K-1:0] take;
    // a stacked bank's read port is the drain's this cycle: no entry enters the pipeline
    wire open = ready && !(STACKED != 0 && drain_read);
    genvar g;
    generate
        if (FIFO_DEPTH == 0) begin : g_direct
            // A private PE: the unit's entry register is the head. It is taken the cycle it is
            // written, as nothing closes `open` then: `ready` is high before the unit may issue
            // (fg_stage.v's `run`), and the banks are two memories.
            if (K != 1 || STACKED != 0) begin : g_invalid
                // an initial block (Yosys stops at it): older Icarus Verilog releases do not parse an elaboration $error
                initial begin
                    $display("ERROR: fg_pe: a PE without FIFOs (FIFO_DEPTH = 0) takes one unit's entries (K = 1) into two banks (STACKED = 0)");
                    $finish;
                end
            end
            assign head = in_entry;
            assign head_valid = in_write;
            assign in_room = {K{1'b1}};
        end else begin : g_queued
            for (g = 0; g < K; g = g + 1) begin : g_fifo
                /* verilator lint_off PINCONNECTEMPTY */
                fg_fifo #(.WIDTH(ENTRY_W), .DEPTH(FIFO_DEPTH), .SLACK(SLACK), .STYLE(FIFO_STYLE)) u_fifo (
                    .clk(clk), .rst(rst),
                    .in_data(in_entry[g*ENTRY_W +: ENTRY_W]), .in_valid(in_write[g]), .in_ready(),
                    .room(in_room[g]),
                    .out_data(head[g*ENTRY_W +: ENTRY_W]), .out_valid(head_valid[g]), .out_ready(take[g])
                );
                /* verilator lint_on PINCONNECTEMPTY */
            end
        end
    endgenerate

    wire [K-1:0] head_end;              // FIFO k's head is an end entry
    for (g = 0; g < K; g = g + 1) begin : g_end
        assign head_end[g] = head[g*ENTRY_W +: VALUE_W] == {VALUE_W{1'b0}};
    end
    wire [K-1:0] passing = take & head_end;      // end entries leaving now
    reg chosen_bank;                    // the bank of the entry taken
    integer k;
    generate
        if (K == 1) begin : g_one
            // the FIFO's vectors alternate between the banks: its bank flips as an end entry leaves
            reg bank;
            always @(*) begin
                take = head_valid & {K{open}};
                chosen_bank = bank;
            end
            always @(posedge clk) begin
                if (rst) bank <= 1'b0;
                else bank <= bank ^ passing[0];
            end
        end else begin : g_oldest_first
            // The oldest vector's entries come first: a FIFO whose head is of the oldest vector
            // this PE has not finished is `behind`, and the first such FIFO with an entry is taken,
            // else the first with an entry. With the first FIFO always first, a unit a vector ahead
            // kept the others' entries of the oldest vector waiting: its bank was whole, and
            // drained, only when the newer vector's entries ran out (Graph Challenge 1024 x 8 at
            // P = 64, K = 4: the first result after 5,345 cycles, 2,756 older first). The choice is
            // a function of registers only (valid flags, `behind`, `open`), written as sums of
            // products; it is the longest path of the Graph Challenge designs, 6 LUT levels at K = 4
            // (Yosys). So is the entry's bank: the oldest vector's when a FIFO behind
            // has an entry, else the next one's (no FIFO holds a later vector's entries while the
            // oldest is not finished here: its unit waits for the oldest's bank to be drained).
            reg [K-1:0] behind;         // FIFO k's head is of the oldest vector
            reg [K-1:0] ahead;          // FIFO k has passed the end of the vector after it too
            reg oldest;                 // the oldest vector's bank
            integer j;
            wire [K-1:0] waiting = head_valid & behind;
            reg [K-1:0] take_waiting, take_any;  // the first waiting head, the first of all heads
            always @(*) begin
                for (k = 0; k < K; k = k + 1) begin
                    take_waiting[k] = waiting[k];
                    take_any[k] = head_valid[k];
                    for (j = 0; j < k; j = j + 1) begin
                        take_waiting[k] = take_waiting[k] && !waiting[j];
                        take_any[k] = take_any[k] && !head_valid[j];
                    end
                    take[k] = open && (take_waiting[k] || (take_any[k] && waiting == {K{1'b0}}));
                end
                chosen_bank = (waiting != {K{1'b0}}) ? oldest : !oldest;
            end
            // `behind` falls as a FIFO's end entry of the oldest vector leaves it. A FIFO past that
            // end may also pass the next vector's before the oldest is finished here (its unit is
            // two ends ahead, `ahead`; the one after cannot start before the oldest is drained).
            // The cycle after no FIFO is behind, the next vector is the oldest, and every FIFO but
            // those is behind it: a cycle late, so that the test is of registers, not of this
            // cycle's choice. Meanwhile no FIFO is preferred, which orders nothing wrongly.
            wire [K-1:0] behind_next = behind & ~passing;
            wire [K-1:0] ahead_next = ahead | (~behind & passing);
            always @(posedge clk) begin
                if (rst) begin
                    behind <= {K{1'b1}};
                    ahead <= {K{1'b0}};
                    oldest <= 1'b0;
                end else if (behind == {K{1'b0}}) begin
                    behind <= ~ahead_next;
                    ahead <= {K{1'b0}};
                    oldest <= !oldest;
                end else begin
                    behind <= behind_next;
                    ahead <= ahead_next;
                end
            end
        end
    endgenerate
    reg [ENTRY_W-1:0] chosen;
    always @(*) begin  // the first FIFO's head unless another is taken (E1 is not valid then)
        chosen = head[ENTRY_W-1:0];
        for (k = 1; k < K; k = k + 1) begin
            if (take[k]) chosen = head[k*ENTRY_W +: ENTRY_W];
        end
    end

    // ---- MAC pipeline: E1 the entry, E2 its product --------------------------------------------------
    reg e1_valid, e1_end, e1_bank;
    reg [LOCAL_W-1:0] e1_local;
    reg signed [VALUE_W-1:0] e1_x;
    reg e2_valid, e2_end, e2_bank;
    wire w_valid, w_end, w_bank;        // the accumulator's write: an entry's sum, or an end entry

    // E1 carries an entry, or the drain's address (stacked banks).
    wire stacked_drain = STACKED != 0 && drain_read;

    // The entry's product at E2: x times its weight, or x alone.
    wire signed [PROD_W-1:0] e2_product;
    generate
        if (W_BITS > 0 && CB_W > 0) begin : g_codebook
            // The weight the entry's index names: a table of constants, one LUT per bit, looked up
            // from the index's register into E2's weight register, and multiplied there. Looked up
            // in front of E1, it made the choice of FIFO, the choice of head and the lookup one
            // path: 7 LUT levels at K = 4 (Yosys). Behind E1 without the E2 register, Yosys moves
            // the index's register across the table (a ROM with a registered address), back to
            // where it was. The product is first needed at E3 (a codebook PE multiplies, so its
            // read-modify-write is pipelined), and E2's weight and x cost no more flip-flops than
            // the product register they replace.
            reg [W_BITS-1:0] e1_index;
            reg signed [CB_W-1:0] e2_w;
            reg signed [VALUE_W-1:0] e2_x;
            always @(posedge clk) begin
                e1_index <= chosen[VALUE_W +: W_BITS];
                e2_w <= CODEBOOK[e1_index * CB_W +: CB_W];
                e2_x <= e1_x;
            end
            assign e2_product = e2_x * e2_w;
        end else begin : g_product_register
            wire signed [PROD_W-1:0] e1_product;
            if (W_BITS > 0) begin : g_weighted
                reg signed [W_BITS-1:0] e1_w;
                always @(posedge clk) e1_w <= chosen[VALUE_W +: W_BITS];
                assign e1_product = e1_x * e1_w;
            end else if (SCALE_SHIFT < 0) begin : g_positions_scaled
                localparam signed [SCALE_W-1:0] SCALE_S = SCALE;
                assign e1_product = e1_x * SCALE_S;
            end else begin : g_positions
                assign e1_product = e1_x;
            end
            reg signed [PROD_W-1:0] e2_prod;
            always @(posedge clk) e2_prod <= e1_product;
            assign e2_product = e2_prod;
        end
    endgenerate

    always @(posedge clk) begin
        if (rst) begin
            e1_valid <= 1'b0;
            e2_valid <= 1'b0;
        end else begin
            e1_valid <= |take;
            e2_valid <= e1_valid;
        end
        e1_end <= |passing;
        e1_bank <= stacked_drain ? drain_bank : chosen_bank;
        e1_local <= stacked_drain ? drain_addr : chosen[ENTRY_W-1 -: LOCAL_W];
        e1_x <= chosen[VALUE_W-1:0];
        e2_end <= e1_end;
        e2_bank <= e1_bank;
    end

    // The end entries of bank b that have left the pipeline: K of them and the bank is whole.
    reg [KB-1:0] ends0, ends1;
    always @(posedge clk) begin
        if (rst) begin
            ends0 <= {KB{1'b0}};
            ends1 <= {KB{1'b0}};
            done <= 2'b00;
        end else begin
            if (drained[0]) ends0 <= {KB{1'b0}};
            else if (w_valid && w_end && !w_bank) ends0 <= ends0 + 1'b1;
            if (drained[1]) ends1 <= {KB{1'b0}};
            else if (w_valid && w_end && w_bank) ends1 <= ends1 + 1'b1;
            done <= {ends1 == ALL_ENDS && !drained[1], ends0 == ALL_ENDS && !drained[0]};
        end
    end

    // After reset every word is cleared, one a cycle (each bank's, or the stacked memory's).
    reg [CLEAR_W-1:0] clear_addr;
    always @(posedge clk) begin
        if (rst) begin
            ready <= 1'b0;
            clear_addr <= {CLEAR_W{1'b0}};
        end else if (!ready) begin
            clear_addr <= clear_addr + 1'b1;
            if (clear_addr == LAST_CLEAR) ready <= 1'b1;
        end
    end

    generate
        if (SINGLE_CYCLE != 0) begin : g_single_cycle
            // Two banks of LUT RAM and one adder. A bank's word is {valid, value}; a word whose
            // valid bit is clear reads as zero. A bank's address each cycle is the MAC's, or the
            // drain's while it empties that bank (they never use one bank at once), or the clear's
            // after reset; it is chosen a cycle early and registered. The MAC adds its product to
            // the value of its bank's word and writes the sum back, valid; the drain and the clear
            // write a word whose valid bit is clear (its value whatever the adder has), so the
            // sum's bits go to both banks as they are and only the valid bit differs: no
            // multiplexer in front of the RAMs. A LUT RAM's read gives the word as it was before the
            // cycle's write, so the drain reads an address and empties it at once. The path to a
            // write: the RAM's read, then the choice of bank, the valid gate and the adder's
            // half-sum in one LUT, and the carry chain.
            wire drain0 = drain_read && !drain_bank;
            wire drain1 = drain_read && drain_bank;
            wire add = e1_valid && !e1_end;
            reg [LOCAL_W-1:0] addr0, addr1; // bank b's address this cycle
            reg add0, add1;                 // the MAC adds into bank b
            reg wipe0, wipe1;               // bank b's address is emptied: drained, or cleared
            reg mac1;                       // the MAC's bank
            reg d1_bank;
            always @(posedge clk) begin
                addr0 <= !ready ? clear_addr : drain0 ? drain_addr : e1_local;
                addr1 <= !ready ? clear_addr : drain1 ? drain_addr : e1_local;
                add0 <= !rst && add && !e1_bank;
                add1 <= !rst && add && e1_bank;
                wipe0 <= !ready || drain0;
                wipe1 <= !ready || drain1;
                mac1 <= e1_bank;
                d1_bank <= drain_bank;
            end
            wire [SUM_W-1:0] product;
            fg_resize #(.IN_W(PROD_W), .OUT_W(SUM_W)) u_product (.in(e2_product), .out(product));
            wire [SUM_W:0] word0, word1;    // {valid, value}
            wire [SUM_W-1:0] value0 = word0[SUM_W-1:0] & {SUM_W{word0[SUM_W]}};
            wire [SUM_W-1:0] value1 = word1[SUM_W-1:0] & {SUM_W{word1[SUM_W]}};
            wire [SUM_W-1:0] sum_now = (mac1 ? value1 : value0) + product;
            fg_lutram #(.WIDTH(SUM_W + 1), .DEPTH(ADDRESSES)) u_bank0 (
                .clk(clk), .we(add0 || wipe0), .waddr(addr0), .wdata({add0, sum_now}), .raddr(addr0), .rdata(word0)
            );
            fg_lutram #(.WIDTH(SUM_W + 1), .DEPTH(ADDRESSES)) u_bank1 (
                .clk(clk), .we(add1 || wipe1), .waddr(addr1), .wdata({add1, sum_now}), .raddr(addr1), .rdata(word1)
            );
            reg [SUM_W-1:0] d2_sum;
            always @(posedge clk) d2_sum <= d1_bank ? value1 : value0;
            assign sum = d2_sum;
            assign w_valid = e2_valid;
            assign w_end = e2_end;
            assign w_bank = e2_bank;
            assign busy = (|head_valid) || e1_valid || e2_valid;
        end else begin : g_pipelined
            // ---- E3 the read's output register and the sum, E4 the write, with forwarding ---------
            reg [LOCAL_W-1:0] e2_local;
            reg e3_valid, e3_end, e3_bank;
            reg [LOCAL_W-1:0] e3_local;
            reg signed [PROD_W-1:0] e3_prod;
            reg [2:0] e3_match;             // which of the three writes ahead holds this address
            reg e4_valid, e4_end, e4_bank;  // e4: the write; e5, e6: the two before it
            reg [LOCAL_W-1:0] e4_local;
            reg [SUM_W-1:0] e4_sum;
            reg e5_valid, e5_bank;
            reg [LOCAL_W-1:0] e5_local;
            reg [SUM_W-1:0] e5_sum, e6_sum;
            wire [SUM_W-1:0] e3_read;       // the accumulator, read at E1
            wire [SUM_W-1:0] e3_product;
            fg_resize #(.IN_W(PROD_W), .OUT_W(SUM_W)) u_e3_product (.in(e3_prod), .out(e3_product));
            wire [SUM_W-1:0] base = e3_match[0] ? e4_sum : e3_match[1] ? e5_sum : e3_match[2] ? e6_sum : e3_read;
            always @(posedge clk) begin
                if (rst) begin
                    e3_valid <= 1'b0;
                    e4_valid <= 1'b0;
                    e5_valid <= 1'b0;
                end else begin
                    e3_valid <= e2_valid;
                    e4_valid <= e3_valid;
                    e5_valid <= e4_valid && !e4_end;
                end
                e2_local <= e1_local;
                e3_end <= e2_end;
                e3_bank <= e2_bank;
                e3_local <= e2_local;
                e3_prod <= e2_product;
                e3_match <= {e5_valid && e5_bank == e2_bank && e5_local == e2_local,
                             e4_valid && !e4_end && e4_bank == e2_bank && e4_local == e2_local,
                             e3_valid && !e3_end && e3_bank == e2_bank && e3_local == e2_local};
                e4_end <= e3_end;
                e4_bank <= e3_bank;
                e4_local <= e3_local;
                e5_bank <= e4_bank;
                e5_local <= e4_local;
                e5_sum <= e4_sum;
                e6_sum <= e5_sum;
            end
            assign w_valid = e4_valid;
            assign w_end = e4_end;
            assign w_bank = e4_bank;
            assign busy = (|head_valid) || e1_valid || e2_valid || e3_valid || e4_valid;

            if (STACKED == 0) begin : g_banks
                // A bank is written with the MAC's sums, or cleared: after reset, and a cycle after
                // the drain has read an address. A clear's zero comes from the bank's own copy of the
                // sum register, whose synchronous reset makes it (a flip-flop's reset pin instead of
                // a multiplexer in front of the RAM's data: 2 x SUM_W LUTs fewer, 2 x SUM_W
                // flip-flops more). The MAC never writes the bank being cleared: the drain and the
                // MAC never use the same bank at once. Nothing forwards a clear, so the MAC's first
                // read of a drained bank must come 2 or more cycles after the drain's last read of
                // it: it comes 13 or more later, 11 without a FIFO (the bank is released when the
                // drain's last word is written, and an entry then passes the unit's registers and
                // this PE's FIFO first).
                reg wipe0, wipe1;           // clear `wipe_addr` of bank b
                reg [LOCAL_W-1:0] wipe_addr;
                reg [SUM_W-1:0] sum0, sum1; // e4_sum, or zero for a clear of bank b
                wire drain0 = drain_read && !drain_bank;
                wire drain1 = drain_read && drain_bank;
                always @(posedge clk) begin
                    wipe0 <= !ready || drain0;
                    wipe1 <= !ready || drain1;
                    wipe_addr <= !ready ? clear_addr : drain_addr;
                    e4_sum <= base + e3_product;
                    if (!ready || drain0) sum0 <= {SUM_W{1'b0}};
                    else sum0 <= base + e3_product;
                    if (!ready || drain1) sum1 <= {SUM_W{1'b0}};
                    else sum1 <= base + e3_product;
                end

                wire [SUM_W-1:0] read0, read1;
                reg [SUM_W-1:0] read0_r, read1_r;  // the output registers
                reg e2_from1, e3_from1;     // the bank the MAC's read came from, at E2 and E3
                fg_ram #(.WIDTH(SUM_W), .DEPTH(ADDRESSES), .STYLE(ACC_STYLE)) u_bank0 (
                    .clk(clk),
                    .we(wipe0 || (e4_valid && !e4_end && !e4_bank)),
                    .waddr(wipe0 ? wipe_addr : e4_local),
                    .wdata(sum0),
                    .re(1'b1),
                    .raddr(drain0 ? drain_addr : e1_local),
                    .rdata(read0)
                );
                fg_ram #(.WIDTH(SUM_W), .DEPTH(ADDRESSES), .STYLE(ACC_STYLE)) u_bank1 (
                    .clk(clk),
                    .we(wipe1 || (e4_valid && !e4_end && e4_bank)),
                    .waddr(wipe1 ? wipe_addr : e4_local),
                    .wdata(sum1),
                    .re(1'b1),
                    .raddr(drain1 ? drain_addr : e1_local),
                    .rdata(read1)
                );
                // The drain and the MAC never use the same bank at once (a vector's entries come
                // only after the drain of the vector two before), so each read's data is the one
                // it asked for.
                reg d2_bank;
                always @(posedge clk) begin
                    read0_r <= read0;
                    read1_r <= read1;
                    e2_from1 <= e1_bank;
                    e3_from1 <= e2_from1;
                    d2_bank <= drain_bank;
                end
                assign e3_read = e3_from1 ? read1_r : read0_r;
                assign sum = d2_bank ? read1_r : read0_r;
            end else begin : g_stacked
                // One memory, {bank, local} its address. The drain's read is in the pipeline from
                // E1 (its address in e1_bank and e1_local) to E4, where it writes a zero.
                reg e1_drain, e2_drain, e3_drain, e4_drain;
                always @(posedge clk) begin
                    if (rst) begin
                        e1_drain <= 1'b0;
                        e2_drain <= 1'b0;
                        e3_drain <= 1'b0;
                        e4_drain <= 1'b0;
                    end else begin
                        e1_drain <= drain_read;
                        e2_drain <= e1_drain;
                        e3_drain <= e2_drain;
                        e4_drain <= e3_drain;
                    end
                end
                // The write data is the sum register, whose synchronous reset makes a clear's zero
                // (the drain's slot at E3, or the clearing after reset): no multiplexer in front of
                // the RAM.
                reg wipe;
                reg [LOCAL_W:0] wipe_addr;
                always @(posedge clk) begin
                    wipe <= !ready;
                    wipe_addr <= clear_addr;
                    if (!ready || e3_drain) e4_sum <= {SUM_W{1'b0}};
                    else e4_sum <= base + e3_product;
                end
                wire [SUM_W-1:0] read;
                reg [SUM_W-1:0] read_r;     // the output register
                fg_ram #(.WIDTH(SUM_W), .DEPTH(2 << LOCAL_W), .STYLE(ACC_STYLE)) u_banks (
                    .clk(clk),
                    .we(wipe || e4_drain || (e4_valid && !e4_end)),
                    .waddr(wipe ? wipe_addr : {e4_bank, e4_local}),
                    .wdata(e4_sum),
                    .re(1'b1),
                    .raddr({e1_bank, e1_local}),
                    .rdata(read)
                );
                always @(posedge clk) read_r <= read;
                assign e3_read = read_r;
                assign sum = read_r;
            end
        end
    endgenerate

endmodule
