// Deals the items of S sub-channels to K issue units, round robin by arrival, so that every unit
// gets an equal share of a vector's activations whatever sub-channels they came on. A vector
// ends when every sub-channel has delivered its end item: then every unit gets one end item.
// Items {end, index, value}; the unit FIFOs' `room` flags are registered, with slack for the
// merger's register between deciding and routing. With SKIP_EMPTY a vector without activations
// deals no end items: `vector_empty` marks its `vector_in`, and its stage writes its end words
// without the units (fg_stage.v, "Empty vectors").
//
// Three steps, each ending in registers (docs/engine.md, "Merger"), so that no path reaches from
// a sub-channel FIFO through a decision into a unit FIFO:
// - fetch: each sub-channel's next two items wait in registers; the FIFO is popped whenever the
//   second register is free, so no decision reaches back into it;
// - decide: from those heads and the merger's own registers, which heads are taken, and each
//   taken activation's unit as a one-hot (the next unit is a one-hot too: no adder);
// - route: each unit's item is an AND-OR of the decided heads by their one-hots.
module fg_merger #(
    parameter integer S = 1,
    parameter integer K = 1,
    parameter integer IDX_W = 1,
    parameter integer SKIP_EMPTY = 0
) (
    input  wire                     clk,
    input  wire                     rst,
    input  wire                     enable,         // deal only while high; heads are fetched anyway
    input  wire [S*ITEM_W-1:0]      in_item,
    input  wire [S-1:0]             in_valid,
    output wire [S-1:0]             in_pop,
    output reg  [K*ITEM_W-1:0]      out_item,
    output reg  [K-1:0]             out_valid,
    input  wire [K-1:0]             out_room,
    output wire                     vector_in,     // pulse: a whole vector has been dealt
    output wire                     vector_empty   // ... and it had no activation (with `vector_in`)
);
    localparam integer VALUE_W = 16;
    localparam integer ITEM_W = 1 + IDX_W + VALUE_W;
    localparam integer DATA_W = IDX_W + VALUE_W;    // an item without its end flag

    // ---- fetch ---------------------------------------------------------------------------------------
    reg [S*ITEM_W-1:0] head, spare;     // per sub-channel its oldest item, and the one after
    reg [S-1:0] head_valid, spare_valid;
    wire [S-1:0] leave;                 // the head is taken (or its end item consumed) now
    wire [S-1:0] fetch = in_valid & ~spare_valid;
    assign in_pop = ~spare_valid;       // a pop of an empty FIFO does nothing
    integer s;
    always @(posedge clk) begin
        if (rst) begin
            head_valid <= {S{1'b0}};
            spare_valid <= {S{1'b0}};
        end else begin
            head_valid <= spare_valid | fetch | (head_valid & ~leave);
            spare_valid <= head_valid & ~leave & (spare_valid | fetch);
        end
        for (s = 0; s < S; s = s + 1) begin
            if (!head_valid[s] || leave[s]) begin
                head[s*ITEM_W +: ITEM_W] <= spare_valid[s] ? spare[s*ITEM_W +: ITEM_W] : in_item[s*ITEM_W +: ITEM_W];
            end
            if (!spare_valid[s]) spare[s*ITEM_W +: ITEM_W] <= in_item[s*ITEM_W +: ITEM_W];
        end
    end

    // ---- decide --------------------------------------------------------------------------------------
    reg [S-1:0] ended;                  // sub-channels that delivered this vector's end item
    reg all_ended;                      // &ended, kept as a register so that `deal` is one LUT
    reg [K-1:0] next;                   // one-hot: the unit that gets the next activation
    reg live;                           // an activation of this vector has been dealt
    wire all_room = &out_room;
    wire deal = enable && all_room && !all_ended;
    assign vector_in = enable && all_room && all_ended;
    assign vector_empty = !live;

    // Which heads are activations and which end items; the first K activations are taken, the
    // r-th of them (r = its rank among this cycle's) by unit next + r, modulo K.
    reg [S-1:0] is_value, is_end, take;
    reg [S*K-1:0] to_unit;              // sub-channel s's head goes to unit u: bit s*K + u
    reg [K-1:0] after;                  // `next` rotated once per activation taken so far
    reg [K-1:0] earlier;                // thermometer: bit j set when more than j activations come before s
    always @(*) begin
        for (s = 0; s < S; s = s + 1) begin
            is_end[s] = head_valid[s] && !ended[s] && head[s*ITEM_W + ITEM_W - 1];
            is_value[s] = head_valid[s] && !ended[s] && !head[s*ITEM_W + ITEM_W - 1];
        end
    end
    always @(*) begin
        after = next;
        earlier = {K{1'b0}};
        for (s = 0; s < S; s = s + 1) begin
            take[s] = is_value[s] && !earlier[K-1];
            to_unit[s*K +: K] = take[s] ? after : {K{1'b0}};
            if (take[s]) after = (after << 1) | (after >> (K - 1));  // rotate: the next unit
            if (is_value[s]) earlier = (earlier << 1) | {{(K-1){1'b0}}, 1'b1};
        end
    end
    assign leave = deal ? (take | is_end) : {S{1'b0}};

    reg [S*DATA_W-1:0] decided;         // the heads as they were when the decision was made
    reg [S*K-1:0] decided_to;           // ... and where the taken ones go
    reg end_dealt;                      // every unit gets an end item
    always @(posedge clk) begin
        if (rst) begin
            ended <= {S{1'b0}};
            all_ended <= 1'b0;
            next <= {{(K-1){1'b0}}, 1'b1};
            decided_to <= {(S*K){1'b0}};
            end_dealt <= 1'b0;
            live <= 1'b0;
        end else begin
            decided_to <= deal ? to_unit : {(S*K){1'b0}};
            end_dealt <= vector_in && (SKIP_EMPTY == 0 || live);
            if (vector_in) begin
                ended <= {S{1'b0}};
                all_ended <= 1'b0;
                live <= 1'b0;
            end else if (deal) begin
                ended <= ended | is_end;
                all_ended <= &(ended | is_end);
                next <= after;
                live <= live || (|take);
            end
        end
        for (s = 0; s < S; s = s + 1) decided[s*DATA_W +: DATA_W] <= head[s*ITEM_W +: DATA_W];
    end

    // ---- route: each unit's item is the taken head meant for it, or an end item ------------------------
    integer u;
    always @(*) begin
        for (u = 0; u < K; u = u + 1) begin
            out_valid[u] = end_dealt;
            out_item[u*ITEM_W +: ITEM_W] = {end_dealt, {DATA_W{1'b0}}};
            for (s = 0; s < S; s = s + 1) begin
                out_valid[u] = out_valid[u] | decided_to[s*K + u];
                out_item[u*ITEM_W +: DATA_W] = out_item[u*ITEM_W +: DATA_W]
                    | (decided[s*DATA_W +: DATA_W] & {DATA_W{decided_to[s*K + u]}});
            end
        end
    end
endmodule
