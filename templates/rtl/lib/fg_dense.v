// The model's last layer's output (docs/engine.md, "Rotated outputs"): a beat of P values a local
// address, zeros past the last output. With ROTATED the layer's outputs are rotated over its PEs,
// output a * P + q on PE (q + r_a) mod P, so that its rows take fewer beats; a rotator puts each
// value back in its place q, a cycle later: the values and r_a (from the table ROTATIONS, by the
// address) into a register, then log2(P) levels of 2:1 multiplexers, each rotating by a power of
// two when its bit of r_a is set (two levels a LUT6), into the beat's register.
module fg_dense #(
    parameter integer P = 1,
    parameter integer VALUE_W = 16,
    parameter integer ADDR_W = 1,
    parameter integer ROTATED = 0,
    parameter integer ROT_W = 1,            // bits of a rotation: log2(P)
    parameter integer ADDRESSES = 1,
    parameter [ADDRESSES*ROT_W-1:0] ROTATIONS = 0  // r_a in bits [a*ROT_W, (a+1)*ROT_W)
) (
    input  wire                     clk,
    input  wire                     rst,
    input  wire                     valid,
    input  wire                     last,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [ADDR_W-1:0]        addr,   // unused without ROTATED
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [P-1:0]             exists,
    input  wire [P*VALUE_W-1:0]     y,
    output reg                      dense_valid,
    output reg                      dense_last,
    output reg  [P*VALUE_W-1:0]     dense_data
);
    localparam integer W = P * VALUE_W;
    reg [W-1:0] values;
    integer q;
    always @(*) begin
        for (q = 0; q < P; q = q + 1) values[q*VALUE_W +: VALUE_W] = exists[q] ? y[q*VALUE_W +: VALUE_W] : {VALUE_W{1'b0}};
    end
    generate
        if (ROTATED == 0) begin : g_in_place
            always @(posedge clk) begin
                dense_valid <= !rst && valid;
                dense_last <= last;
                dense_data <= values;
            end
        end else begin : g_rotated
            reg held_valid, held_last;
            reg [W-1:0] held;
            reg [ROT_W-1:0] rotation;
            always @(posedge clk) begin
                held_valid <= !rst && valid;
                held_last <= last;
                held <= values;
                rotation <= ROTATIONS[addr*ROT_W +: ROT_W];
            end
            // level l + 1: level l rotated down by 2^l values where bit l of the rotation is set
            wire [(ROT_W+1)*W-1:0] levels;
            assign levels[0 +: W] = held;
            genvar l;
            for (l = 0; l < ROT_W; l = l + 1) begin : g_level
                localparam integer S = (1 << l) * VALUE_W;
                wire [W-1:0] rotating = levels[l*W +: W];
                assign levels[(l+1)*W +: W] = rotation[l] ? {rotating[S-1:0], rotating[W-1:S]} : rotating;
            end
            always @(posedge clk) begin
                dense_valid <= !rst && held_valid;
                dense_last <= held_last;
                dense_data <= levels[ROT_W*W +: W];
            end
        end
    endgenerate
endmodule
