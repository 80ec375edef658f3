// Turns words of G values (a drained local address of G PEs, or G values of an input beat) into
// items {end, index, value}, one nonzero value per cycle, lowest first; a word without nonzero
// values costs one cycle. A word {end, base, count, mask, values}: `mask` marks the nonzero
// values, `count` how many there are (precomputed by the producer, so that the word's last item
// is known without counting bits here); value i has index base * STRIDE + OFFSET + i, with
// OFFSET + G <= STRIDE. When STRIDE is a power of two (an input beat, a sequential stage, most
// dataflow stages) the index is a concatenation; otherwise (a dataflow stage of, say, 40 PEs) the
// word's first index is computed as the word is taken, and each value's index is that plus its
// position. An end word (end set; its other fields are not read) becomes one end item: the vector
// is over on this sub-channel.
module fg_serializer #(
    parameter integer G = 1,            // values per word
    parameter integer GB = 1,           // bits of a value's position: max(1, log2(G))
    parameter integer COUNT_W = 1,      // bits of `count`: holds 0..G
    parameter integer BASE_W = 1,       // bits of `base`
    parameter integer OFFSET = 0,       // this group's first position in a word of STRIDE values
    parameter integer STRIDE = 1,       // values a step of `base` covers: the PEs, or an input beat's values
    parameter integer IDX_W = 1         // index width of the items written
) (
    input  wire                     clk,
    input  wire                     rst,
    // the word FIFO's head
    input  wire [WORD_W-1:0]        word,
    input  wire                     word_valid,
    output wire                     word_pop,
    // the sub-channel FIFO's write side; `room` is its registered flag (enough slack for the
    // item register below)
    output reg  [ITEM_W-1:0]        item,
    output reg                      item_valid,
    input  wire                     room
);
    localparam integer VALUE_W = 16;  // activations travel as 16-bit values (docs/engine.md)
    localparam integer ITEM_W = 1 + IDX_W + VALUE_W;  // {end, index, value}
    localparam integer WORD_W = 1 + BASE_W + COUNT_W + G + G * VALUE_W;

    // the word being serialized
    reg              held;
    reg              end_w;
    /* verilator lint_off UNUSEDSIGNAL */
    reg [BASE_W-1:0] base_w;      // unused when the index is a sum: `first` takes the base instead
    /* verilator lint_on UNUSEDSIGNAL */
    reg [COUNT_W-1:0] count;      // values still to emit
    reg [G-1:0]      pending;     // their positions
    reg [G-1:0]      sel;         // the lowest of them, one-hot: found a cycle ahead, so that no
                                  // carry chain sits in front of the value multiplexer (timing)
    reg [G*VALUE_W-1:0] values;

    // The selected value and its number.
    reg [VALUE_W-1:0] value;
    reg [GB-1:0] position;
    integer i;
    always @(*) begin
        value = {VALUE_W{1'b0}};
        position = {GB{1'b0}};
        for (i = 0; i < G; i = i + 1) begin
            if (sel[i]) begin
                value = value | values[i*VALUE_W +: VALUE_W];
                position = position | i[GB-1:0];
            end
        end
    end
    wire [G-1:0] word_mask = word[G*VALUE_W +: G];
    wire [G-1:0] rest = pending & ~sel;   // what is left once `sel` is emitted

    wire emit_end = held && end_w && room;
    wire emit_value = held && !end_w && count != {COUNT_W{1'b0}} && room;
    wire done = emit_end || (held && !end_w && (count == {COUNT_W{1'b0}} ||
                                                 (count == {{(COUNT_W-1){1'b0}}, 1'b1} && room)));
    assign word_pop = word_valid && (!held || done);

    // The item's index: base, then this group's offset with the position in it.
    localparam integer STRIDE_W = $clog2(STRIDE);
    localparam [31:0] OFFSET32 = OFFSET;
    localparam [31:0] STRIDE32 = STRIDE;
    localparam integer INDEX_W = BASE_W + STRIDE_W;  // holds (2^BASE_W - 1) * STRIDE + OFFSET + G - 1
    // Wider than IDX_W when the stage has more PEs than its layer outputs: the bits above are zero.
    /* verilator lint_off UNUSEDSIGNAL */
    wire [INDEX_W-1:0] index;
    /* verilator lint_on UNUSEDSIGNAL */
    generate
        if (STRIDE == 1) begin : g_base
            assign index = base_w;
        end else if ((STRIDE & (STRIDE - 1)) == 0) begin : g_offset
            wire [STRIDE_W-1:0] low_bits = OFFSET32[STRIDE_W-1:0] | {{(STRIDE_W - GB){1'b0}}, position};
            assign index = {base_w, low_bits};
        end else begin : g_sum
            // base * STRIDE + OFFSET, registered as the word is taken: the multiply by a constant is
            // a few adders that must not sit on the path to the item register
            wire [BASE_W-1:0] next_base = word[G*VALUE_W + G + COUNT_W +: BASE_W];
            reg [INDEX_W-1:0] first;
            always @(posedge clk) begin
                if (word_pop) first <= {{STRIDE_W{1'b0}}, next_base} * STRIDE32[INDEX_W-1:0] + OFFSET32[INDEX_W-1:0];
            end
            assign index = first + {{(INDEX_W - GB){1'b0}}, position};
        end
    endgenerate

    always @(posedge clk) begin
        if (rst) begin
            held <= 1'b0;
            item_valid <= 1'b0;
        end else begin
            item_valid <= emit_end || emit_value;
            if (word_pop) held <= 1'b1;
            else if (done) held <= 1'b0;
        end
        // an end item is {1, 0, 0}: its word's other fields are left over from the word before
        item <= emit_end ? {1'b1, {(ITEM_W - 1){1'b0}}} : {1'b0, index[IDX_W-1:0], value};
        if (word_pop) begin
            {end_w, base_w, count, pending, values} <= word;
            sel <= word_mask & ~(word_mask - 1'b1);
        end else if (emit_value) begin
            count <= count - 1'b1;
            pending <= rest;
            sel <= rest & ~(rest - 1'b1);
        end
    end
endmodule
