// A value resized: extended when OUT_W is wider (with its sign bit when SIGNED, with zeros
// otherwise), wrapped (its low bits kept) when narrower. Wrapping is exact wherever the engine
// uses it: the true result fits OUT_W bits.
module fg_resize #(
    parameter integer IN_W = 1,
    parameter integer OUT_W = 1,
    parameter integer SIGNED = 1
) (
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [IN_W-1:0]  in,   // the bits above OUT_W only when extending
    /* verilator lint_on UNUSEDSIGNAL */
    output wire [OUT_W-1:0] out
);
    generate
        if (OUT_W > IN_W) begin : g_extend
            assign out = {{(OUT_W - IN_W){SIGNED != 0 && in[IN_W-1]}}, in};
        end else begin : g_wrap
            assign out = in[OUT_W-1:0];
        end
    endgenerate
endmodule
