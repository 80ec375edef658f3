// Block-level control with the ap_ctrl_hs handshake: ap_start starts a batch of `batch` vectors;
// ap_done and ap_ready pulse when the last output vector has left; ap_idle while nothing runs.
module fg_control (
    input  wire        clk,
    input  wire        rst,
    input  wire        ap_start,
    output wire        ap_done,
    output wire        ap_idle,
    output wire        ap_ready,
    input  wire [31:0] batch,
    input  wire        vector_in,     // the input reader finished a vector
    input  wire        vector_out,    // the last beat of an output vector left
    output wire        in_enable
);
    reg running;
    reg done;
    reg [31:0] count;
    reg [31:0] read;
    reg [31:0] written;

    assign ap_idle = !running;
    assign ap_done = done;
    assign ap_ready = done;
    assign in_enable = running && (read != count);

    always @(posedge clk) begin
        done <= 1'b0;
        if (rst) begin
            running <= 1'b0;
            read <= 32'd0;
            written <= 32'd0;
            count <= 32'd0;
        end else if (!running) begin
            if (ap_start && !done) begin
                running <= 1'b1;
                count <= batch;
                read <= 32'd0;
                written <= 32'd0;
            end
        end else begin
            if (vector_in) read <= read + 32'd1;
            if (vector_out) written <= written + 32'd1;
            if (written == count || (vector_out && written + 32'd1 == count)) begin
                running <= 1'b0;
                done <= 1'b1;
            end
        end
    end
endmodule
