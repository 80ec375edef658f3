// One of 2^SEL_W words of W bits: a tree of 2:1 multiplexers, a select bit a level, which
// synthesis maps to a LUT6 a bit up to 4:1 and adds a slice's MUXF7 for 8:1 (an index into the
// words, `in[sel*W +: W]`, became a barrel shifter of the whole input, and a multiplier for the
// index, in Yosys).
module fg_select #(
    parameter integer W = 1,
    parameter integer SEL_W = 1
) (
    input  wire [(W << SEL_W)-1:0]  in,
    input  wire [SEL_W-1:0]         sel,
    output wire [W-1:0]             out
);
    genvar level, j;
    generate
        for (level = 0; level <= SEL_W; level = level + 1) begin : g_level
            wire [(W << (SEL_W - level))-1:0] words;   // level l: 2^(SEL_W - l) words
            if (level == 0) begin : g_in
                assign words = in;
            end else begin : g_pick
                for (j = 0; j < (1 << (SEL_W - level)); j = j + 1) begin : g_node
                    assign words[j*W +: W] = sel[level-1] ? g_level[level-1].words[(2*j + 1)*W +: W]
                                                          : g_level[level-1].words[2*j*W +: W];
                end
            end
        end
    endgenerate
    assign out = g_level[SEL_W].words;
endmodule
