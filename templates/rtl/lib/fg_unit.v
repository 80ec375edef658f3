// An issue unit of a dataflow stage (docs/engine.md, "Issue units"): it takes activations from its
// FIFO, looks their rows up in the row table and issues each row's weight beats, one per cycle,
// into its FIFO at every PE: a PE gets the beat's slot for it when the slot is valid. A stage has
// K units, each on a port of the row table and of the weight ROM.
//
// Lookup (L0 pop, L1 address, L2-L3 the ROM's two registers) writes rows {end, start, beats, x}
// into a small FIFO; the issue stage reads it. A row of b beats takes b cycles, a row without
// beats one. The end item of a vector becomes an end entry at every PE, then the unit moves to the
// other bank, once the drain has freed it. `ok` (every PE FIFO of this unit has room) is
// registered upstream: the unit writes at most SLACK entries into a FIFO before it sees `ok` fall.
// A private stage's unit (fg_stage.v, PRIVATE) writes its own PEs, which have no FIFO: `ok` is
// always high there, and the unit waits only for `run` and a free bank. `touched` tells the drain
// which banks hold a beat of this unit's: a vector that puts no entry on the PEs leaves its bank
// empty (fg_stage.v, QUIET).
module fg_unit #(
    parameter integer P = 1,
    parameter integer IDX_W = 1,        // index width of the activations
    parameter integer ROW_AW = 1,       // row table address width
    parameter integer START_W = 1,
    parameter integer CNT_W = 1,
    parameter integer BEAT_AW = 1,      // weight ROM address width
    parameter integer SLOT_W = 3,       // {valid, local, weight}
    parameter integer LOCAL_W = 1,
    parameter integer W_BITS = 1,
    parameter integer ROW_FIFO_DEPTH = 8,
    parameter ROW_FIFO_STYLE = "distributed"
) (
    input  wire                     clk,
    input  wire                     rst,
    input  wire                     run,            // the PEs are ready
    // activations {end, index, value}
    input  wire [ITEM_W-1:0]        item,
    input  wire                     item_valid,
    output wire                     item_pop,
    // row table port (data two cycles after the address)
    output wire                     row_en,
    output wire [ROW_AW-1:0]        row_addr,
    input  wire [START_W+CNT_W-1:0] row_data,       // {start, beats}
    // weight ROM port
    output wire                     beat_en,
    output wire [BEAT_AW-1:0]       beat_addr,
    input  wire [P*SLOT_W-1:0]      beat_data,
    // this unit's FIFO at every PE
    output reg  [P*ENTRY_W-1:0]     entry,
    output reg  [P-1:0]             entry_write,
    input  wire                     ok,
    // banks: vectors are numbered modulo 4; a unit may work on the two after the last drained
    input  wire [1:0]               drained_vectors,
    input  wire [1:0]               drained,        // pulse: the drain has emptied bank b
    output reg  [1:0]               touched,        // bank b has had a beat of this unit's since its drain
    output wire                     vector_issued,  // pulse: this unit has sent a vector's end entries
    output wire                     working         // issuing, or a row waits only for PE FIFO room
);
    localparam integer VALUE_W = 16;
    localparam integer ITEM_W = 1 + IDX_W + VALUE_W;
    localparam integer ENTRY_W = LOCAL_W + W_BITS + VALUE_W;   // {local, weight, x}; x = 0: an end entry
    localparam integer ROW_W = 1 + START_W + CNT_W + VALUE_W;      // {end, start, beats, x}
    localparam integer LOOKUP_SLACK = 5;  // the pop, three lookup stages, the room flag's register

    // ---- lookup ---------------------------------------------------------------------------------
    wire row_room;
    reg l1_valid, l2_valid, l3_valid;
    reg l1_end, l2_end, l3_end;
    reg [VALUE_W-1:0] l1_x, l2_x, l3_x;
    reg [IDX_W-1:0] l1_index;
    assign item_pop = item_valid && row_room && run;
    assign row_en = l1_valid;
    assign row_addr = l1_index[ROW_AW-1:0];

    always @(posedge clk) begin
        if (rst) begin
            l1_valid <= 1'b0;
            l2_valid <= 1'b0;
            l3_valid <= 1'b0;
        end else begin
            l1_valid <= item_pop;
            l2_valid <= l1_valid;
            l3_valid <= l2_valid;
        end
        {l1_end, l1_index, l1_x} <= item;
        l2_end <= l1_end;
        l2_x <= l1_x;
        l3_end <= l2_end;
        l3_x <= l2_x;
    end

    wire [ROW_W-1:0] head;
    wire head_valid;
    wire head_pop;
    /* verilator lint_off PINCONNECTEMPTY */
    fg_fifo #(.WIDTH(ROW_W), .DEPTH(ROW_FIFO_DEPTH), .SLACK(LOOKUP_SLACK), .STYLE(ROW_FIFO_STYLE)) u_rows (
        .clk(clk), .rst(rst),
        .in_data({l3_end, l3_end ? {(START_W + CNT_W){1'b0}} : row_data, l3_x}), .in_valid(l3_valid), .in_ready(),
        .room(row_room),
        .out_data(head), .out_valid(head_valid), .out_ready(head_pop)
    );
    /* verilator lint_on PINCONNECTEMPTY */
    wire head_end = head[ROW_W-1];
    wire [START_W-1:0] head_start = head[CNT_W + VALUE_W +: START_W];
    wire [CNT_W-1:0] head_beats = head[VALUE_W +: CNT_W];
    wire [VALUE_W-1:0] head_x = head[VALUE_W-1:0];

    // ---- issue ------------------------------------------------------------------------------------
    reg [START_W-1:0] cur;
    reg [CNT_W-1:0] rem;                // beats of the current row still to issue
    reg [VALUE_W-1:0] x;
    reg [1:0] vector;                   // the vector being issued, modulo 4
    wire bank_free = (vector - drained_vectors) < 2'd2;
    wire go = ok && bank_free && run;
    wire rem_one = rem == {{(CNT_W-1){1'b0}}, 1'b1};
    wire rem_none = rem == {CNT_W{1'b0}};
    // A row's first beat goes out the cycle the row is taken; the next row is taken with the
    // current one's last beat.
    assign head_pop = go && head_valid && (rem_none || (rem_one && !head_end));
    wire take_first = head_pop && !head_end && head_beats != {CNT_W{1'b0}};
    wire issue_beat = (go && !rem_none) || take_first;
    wire issue_end = head_pop && head_end;
    assign beat_en = issue_beat;
    assign beat_addr = rem_none ? head_start[BEAT_AW-1:0] : cur[BEAT_AW-1:0];
    assign vector_issued = issue_end;
    // Waiting for a free bank is the drain's time, not this unit's.
    assign working = (!rem_none || head_valid || l1_valid || l2_valid || l3_valid) && bank_free;

    // A vector's first beat can go out the cycle its bank's drain pulse is seen: the beat's flag
    // then wins over the clearing.
    always @(posedge clk) begin
        if (rst) begin
            touched <= 2'b00;
        end else begin
            touched <= touched & ~drained;
            if (issue_beat) touched[vector[0]] <= 1'b1;
        end
    end

    always @(posedge clk) begin
        if (rst) begin
            rem <= {CNT_W{1'b0}};
            vector <= 2'd0;
        end else begin
            if (issue_end) vector <= vector + 2'd1;
            if (head_pop) begin
                // the next row, its first beat issued now unless the current row's last one is
                rem <= head_end ? {CNT_W{1'b0}} : (rem_none && head_beats != {CNT_W{1'b0}}) ? head_beats - 1'b1 : head_beats;
                cur <= rem_none ? head_start + 1'b1 : head_start;
                x <= head_x;
            end else if (go && !rem_none) begin
                rem <= rem - 1'b1;
                cur <= cur + 1'b1;
            end
        end
    end

    // ---- beats to entries (the ROM's data comes two cycles after the address) ---------------------
    reg b1_valid, b2_valid, b1_end, b2_end;
    reg [VALUE_W-1:0] b1_x, b2_x;       // zero for an end entry: every other x is a nonzero activation
    always @(posedge clk) begin
        if (rst) begin
            b1_valid <= 1'b0;
            b2_valid <= 1'b0;
        end else begin
            b1_valid <= issue_beat || issue_end;
            b2_valid <= b1_valid;
        end
        b1_end <= issue_end;
        b1_x <= issue_end ? {VALUE_W{1'b0}} : rem_none ? head_x : x;
        b2_end <= b1_end;
        b2_x <= b1_x;
    end

    integer p;
    always @(posedge clk) begin
        for (p = 0; p < P; p = p + 1) begin
            // slot {valid, local, weight}; an end entry goes to every PE (its bank is the PE's to
            // know: fg_pe.v)
            entry_write[p] <= !rst && b2_valid && (b2_end || beat_data[p*SLOT_W + SLOT_W - 1]);
            entry[p*ENTRY_W +: ENTRY_W] <= {beat_data[p*SLOT_W +: SLOT_W-1], b2_x};
        end
    end
endmodule
