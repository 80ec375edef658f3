// A registered AND of N bits in two stages: groups of eight, then the groups' ANDs (N <= 288: at
// most 36 of them, two LUT6 levels); two cycles of latency. The wide readiness and completion
// flags of the PEs go through it (up to 256 of a private stage), so that no path carries a wide AND
// into logic behind it (docs/engine.md, "Timing").
module fg_all #(
    parameter integer N = 1
) (
    input  wire         clk,
    input  wire [N-1:0] in,
    output reg          out
);
    localparam integer GROUPS = (N + 7) / 8;

    wire [GROUPS*8-1:0] padded;
    generate
        if (GROUPS * 8 > N) begin : g_pad
            assign padded = {{(GROUPS * 8 - N){1'b1}}, in};
        end else begin : g_full
            assign padded = in;
        end
    endgenerate

    reg [GROUPS-1:0] part;
    integer g;
    always @(posedge clk) begin
        for (g = 0; g < GROUPS; g = g + 1) begin
            part[g] <= &padded[g*8 +: 8];
        end
        out <= &part;
    end
endmodule
