// Deals the items of S sub-channels to K issue units, round robin by arrival, so that every unit
// gets an equal share of a vector's activations whatever sub-channels they came on. A vector
// ends when every sub-channel has delivered its end item: then every unit gets one end item.
// Items {end, index, value}; the unit FIFOs' `room` flags are registered, with slack for the
// output registers below.
module fg_merger #(
    parameter integer S = 1,
    parameter integer K = 1,
    parameter integer KB = 1,       // max(1, log2(K))
    parameter integer IDX_W = 1
) (
    input  wire                     clk,
    input  wire                     rst,
    input  wire [S*ITEM_W-1:0]      in_item,
    input  wire [S-1:0]             in_valid,
    output wire [S-1:0]             in_pop,
    output reg  [K*ITEM_W-1:0]      out_item,
    output reg  [K-1:0]             out_valid,
    input  wire [K-1:0]             out_room,
    output wire                     vector_in      // pulse: a whole vector has been dealt (for counters)
);
    localparam integer VALUE_W = 16;
    localparam integer ITEM_W = 1 + IDX_W + VALUE_W;

    localparam [31:0] K32 = K;
    localparam [KB:0] UNITS = K32[KB:0];

    reg [S-1:0] ended;          // sub-channels that delivered this vector's end item
    reg [KB-1:0] next_unit;     // the unit that gets the next activation
    wire all_room = &out_room;
    wire all_ended = &ended;

    // Which heads are activations, which end items; the first K activations are taken, each by
    // the unit next_unit + its rank among this cycle's, modulo K.
    reg [S-1:0] is_value, is_end, take;
    reg [S*KB-1:0] unit;
    reg [KB:0] taken;
    integer s;
    always @(*) begin
        taken = {(KB+1){1'b0}};
        unit = {(S*KB){1'b0}};
        for (s = 0; s < S; s = s + 1) begin
            is_end[s] = in_valid[s] && !ended[s] && in_item[s*ITEM_W + ITEM_W - 1];
            is_value[s] = in_valid[s] && !ended[s] && !in_item[s*ITEM_W + ITEM_W - 1];
            take[s] = is_value[s] && taken < UNITS;
            if (K > 1) unit[s*KB +: KB] = next_unit + taken[KB-1:0];
            if (take[s]) taken = taken + 1'b1;
        end
    end
    assign in_pop = (all_room && !all_ended) ? (take | is_end) : {S{1'b0}};
    assign vector_in = all_room && all_ended;

    integer u, t;
    always @(posedge clk) begin
        if (rst) begin
            ended <= {S{1'b0}};
            next_unit <= {KB{1'b0}};
            out_valid <= {K{1'b0}};
        end else if (all_room) begin
            if (all_ended) begin
                ended <= {S{1'b0}};
                out_valid <= {K{1'b1}};
            end else begin
                ended <= ended | is_end;
                next_unit <= (K == 1) ? {KB{1'b0}} : next_unit + taken[KB-1:0];
                out_valid <= {K{1'b0}};
                for (t = 0; t < S; t = t + 1) begin
                    if (take[t]) out_valid[unit[t*KB +: KB]] <= 1'b1;
                end
            end
        end else begin
            out_valid <= {K{1'b0}};
        end
        for (u = 0; u < K; u = u + 1) begin
            out_item[u*ITEM_W +: ITEM_W] <= {1'b1, {(ITEM_W-1){1'b0}}};  // an end item, unless an activation
        end
        for (t = 0; t < S; t = t + 1) begin
            if (take[t]) out_item[unit[t*KB +: KB]*ITEM_W +: ITEM_W] <= in_item[t*ITEM_W +: ITEM_W];
        end
    end
endmodule
