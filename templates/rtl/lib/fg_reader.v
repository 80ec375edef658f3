// Input reader (docs/engine.md): AXI4-Stream beats of LANES 16-bit values become the first channel,
// S sub-channels of nonzero activations: group s of every beat (values s*G .. s*G+G-1, at indices
// t*LANES + s*G + i) is serialized into sub-channel s, lowest first; after a vector's last beat, an
// end item on each. The beat is taken only when every group's word FIFO has room, and a vector's
// last beat is followed by one cycle without a beat, for the end words.
module fg_reader #(
    parameter integer LANES = 1,        // values per beat
    parameter integer S = 1,            // sub-channels
    parameter integer G = 1,            // values per group: LANES / S
    parameter integer GB = 1,           // max(1, log2(G))
    parameter integer COUNT_W = 1,      // bits holding 0..G
    parameter integer N_IN = 1,
    parameter integer BEAT_W = 1,       // bits of a beat's number within a vector
    parameter integer IDX_W = 1,
    parameter integer WORD_FIFO_DEPTH = 16,
    parameter WORD_FIFO_STYLE = "distributed"
) (
    input  wire                     clk,
    input  wire                     rst,
    input  wire                     enable,         // more vectors are expected
    input  wire [VALUE_W*LANES-1:0]     s_tdata,
    input  wire                     s_tvalid,
    output wire                     s_tready,
    output wire [S*ITEM_W-1:0]      out_item,
    output wire [S-1:0]             out_valid,
    input  wire [S-1:0]             out_room,
    output wire                     vector_read     // pulse: a whole vector has been taken
);
    localparam integer VALUE_W = 16;
    localparam integer ITEM_W = 1 + IDX_W + VALUE_W;
    localparam integer WORD_W = 1 + BEAT_W + COUNT_W + G + G * VALUE_W;
    localparam integer BEATS = (N_IN + LANES - 1) / LANES;
    localparam [31:0] LAST_BEAT32 = BEATS - 1;
    localparam [BEAT_W-1:0] LAST_BEAT = LAST_BEAT32[BEAT_W-1:0];
    localparam integer SLACK = 4;       // two word registers, the end word, the flag's register

    wire [S-1:0] word_room;
    reg [BEAT_W-1:0] t;                 // the next beat's number in its vector
    reg gap;                            // the cycle after a vector's last beat
    assign s_tready = enable && !gap && (&word_room);
    wire beat = s_tvalid && s_tready;
    assign vector_read = beat && t == LAST_BEAT;

    always @(posedge clk) begin
        if (rst) begin
            t <= {BEAT_W{1'b0}};
            gap <= 1'b0;
        end else begin
            gap <= vector_read;
            if (beat) t <= (t == LAST_BEAT) ? {BEAT_W{1'b0}} : t + 1'b1;
        end
    end

    // W1: the beat and which values are real and nonzero; W2: per group their count.
    reg w1_valid, w1_last, w2_valid, w2_last, end_word;
    reg [BEAT_W-1:0] w1_t, w2_t;
    reg [LANES-1:0] w1_mask, w2_mask;
    reg [VALUE_W*LANES-1:0] w1_values, w2_values;
    integer q;
    always @(posedge clk) begin
        w1_valid <= !rst && beat;
        w1_last <= t == LAST_BEAT;
        w1_t <= t;
        w1_values <= s_tdata;
        for (q = 0; q < LANES; q = q + 1) begin
            w1_mask[q] <= s_tdata[q*VALUE_W +: VALUE_W] != {VALUE_W{1'b0}} && (t != LAST_BEAT || q < N_IN - (BEATS - 1) * LANES);
        end
        w2_valid <= !rst && w1_valid;
        w2_last <= w1_last;
        w2_t <= w1_t;
        w2_mask <= w1_mask;
        w2_values <= w1_values;
        end_word <= !rst && w2_valid && w2_last;
    end

    genvar s;
    generate
        for (s = 0; s < S; s = s + 1) begin : g_group
            reg [COUNT_W-1:0] count, w2_count;
            integer b;
            always @(*) begin
                count = {COUNT_W{1'b0}};
                for (b = 0; b < G; b = b + 1) count = count + w1_mask[s*G + b];
            end
            always @(posedge clk) w2_count <= count;
            // an end word is its flag, the rest whatever W2 holds (fg_stage.v)
            wire [WORD_W-1:0] word = {end_word, w2_t, w2_count, w2_mask[s*G +: G], w2_values[s*G*VALUE_W +: G*VALUE_W]};
            wire [WORD_W-1:0] head;
            wire head_valid, head_pop;
            /* verilator lint_off PINCONNECTEMPTY */
            fg_fifo #(.WIDTH(WORD_W), .DEPTH(WORD_FIFO_DEPTH), .SLACK(SLACK), .STYLE(WORD_FIFO_STYLE)) u_words (
                .clk(clk), .rst(rst),
                .in_data(word), .in_valid(w2_valid || end_word), .in_ready(), .room(word_room[s]),
                .out_data(head), .out_valid(head_valid), .out_ready(head_pop)
            );
            /* verilator lint_on PINCONNECTEMPTY */
            fg_serializer #(
                .G(G), .GB(GB), .COUNT_W(COUNT_W), .BASE_W(BEAT_W), .OFFSET(s * G), .STRIDE(LANES), .IDX_W(IDX_W)
            ) u_serializer (
                .clk(clk), .rst(rst),
                .word(head), .word_valid(head_valid), .word_pop(head_pop),
                .item(out_item[s*ITEM_W +: ITEM_W]), .item_valid(out_valid[s]), .room(out_room[s])
            );
        end
    endgenerate
endmodule
