// Counts the whole vectors a channel holds: a consumer starts reading a vector only once its
// producer has written all of it, so a stage never waits for input in the middle of a vector.
module fg_vector_count #(
    parameter integer MAX = 2
) (
    input  wire clk,
    input  wire rst,
    input  wire written,   // the producer finished a vector
    input  wire read,      // the consumer finished a vector
    output wire ready      // at least one whole vector is in the channel
);
    localparam integer W = $clog2(MAX + 1);
    reg [W-1:0] count;
    assign ready = (count != {W{1'b0}});
    always @(posedge clk) begin
        if (rst) count <= {W{1'b0}};
        else if (written && !read) count <= count + 1'b1;
        else if (read && !written) count <= count - 1'b1;
    end
endmodule
