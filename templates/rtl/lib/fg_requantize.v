// The drain's requantizer (docs/numerics.md): y = clamp((acc + bias') >>> shift, lo, hi), where
// bias' already holds the rounding term 2^(shift-1) and acc is a PE's sum scaled by the layer's one
// weight when its entries carry none (fg_pe.v): |SCALE| = 2^SCALE_SHIFT is a shift (wiring), a
// negative SCALE subtracts; any other SCALE the PE has multiplied by already. Three registers: the
// total, the shifted total, y; `sum` and `bias` come together.
module fg_requantize #(
    parameter integer W_BITS = 8,       // 0: positions only (SCALE, SCALE_SHIFT)
    parameter integer ACC_W = 32,       // the total: the bias and the scaled accumulator
    parameter integer SUM_W = ACC_W,    // a PE's accumulator
    parameter integer SCALE = 1,
    parameter integer SCALE_SHIFT = 0,
    parameter integer SHIFT_W = 6       // bits of cfg_shift
) (
    input  wire                     clk,
    input  wire [SUM_W-1:0]         sum,
    input  wire [ACC_W-1:0]         bias,
    input  wire [SHIFT_W-1:0]       cfg_shift,
    input  wire [VALUE_W-1:0]       cfg_lo,
    input  wire [VALUE_W-1:0]       cfg_hi,
    output reg  [VALUE_W-1:0]       y
);
    localparam integer VALUE_W = 16;  // activations travel as 16-bit values (docs/engine.md)
    localparam integer CMP_W = (ACC_W > VALUE_W) ? ACC_W : VALUE_W + 1;
    localparam integer SUBTRACT = (W_BITS == 0 && SCALE < 0 && SCALE_SHIFT >= 0) ? 1 : 0;
    localparam integer SUM_SHIFT = (SCALE_SHIFT > 0) ? SCALE_SHIFT : 0;
    wire signed [ACC_W-1:0] sum_wide;
    fg_resize #(.IN_W(SUM_W), .OUT_W(ACC_W)) u_sum (.in(sum), .out(sum_wide));
    wire signed [ACC_W-1:0] acc = sum_wide <<< SUM_SHIFT;
    reg signed [ACC_W-1:0] total;
    reg signed [CMP_W-1:0] shifted;
    wire [CMP_W-1:0] shifted_wide;
    wire signed [ACC_W-1:0] total_shifted = total >>> cfg_shift;
    fg_resize #(.IN_W(ACC_W), .OUT_W(CMP_W)) u_wide (.in(total_shifted), .out(shifted_wide));
    wire signed [CMP_W-1:0] lo = {{(CMP_W-VALUE_W){cfg_lo[VALUE_W-1]}}, cfg_lo};
    wire signed [CMP_W-1:0] hi = {{(CMP_W-VALUE_W){cfg_hi[VALUE_W-1]}}, cfg_hi};
    /* verilator lint_off UNUSEDSIGNAL */
    wire signed [CMP_W-1:0] clamped = (shifted < lo) ? lo : (shifted > hi) ? hi : shifted;  // upper bits: the sign
    /* verilator lint_on UNUSEDSIGNAL */
    always @(posedge clk) begin
        total <= (SUBTRACT != 0) ? bias - acc : bias + acc;
        shifted <= shifted_wide;
        y <= clamped[VALUE_W-1:0];
    end
endmodule
