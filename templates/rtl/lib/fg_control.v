// Block-level control with the ap_ctrl_hs handshake: ap_start starts a batch of `batch` vectors;
// ap_done and ap_ready pulse when the last output vector has left; ap_idle while nothing runs.
module fg_control (
    input  wire        clk,
    input  wire        rst,
    input  wire        ap_start,
    output wire        ap_done,
    output wire        ap_idle,
    output wire        ap_ready,
    output reg         started,       // pulse: a batch of vectors starts (the sequential stages load their tables)
    input  wire [31:0] batch,
    input  wire        vector_in,     // the input reader finished a vector
    input  wire        vector_out,    // the last beat of an output vector left
    output wire        in_enable
);
    // Down-counters compared with constants: no adder in front of a comparison (docs/engine.md,
    // "Timing"); the output vectors are counted one cycle late, which only delays ap_done.
    reg running;
    reg done;
    reg [31:0] to_read;
    reg [31:0] to_write;
    reg wrote;                      // vector_out, registered
    reg reading;                    // to_read != 0, kept a register so that in_enable is one gate

    assign ap_idle = !running;
    assign ap_done = done;
    assign ap_ready = done;
    assign in_enable = running && reading;

    always @(posedge clk) begin
        done <= 1'b0;
        started <= 1'b0;
        wrote <= !rst && vector_out;
        if (rst) begin
            running <= 1'b0;
            to_read <= 32'd0;
            to_write <= 32'd0;
            reading <= 1'b0;
        end else if (!running) begin
            if (ap_start && !done) begin
                running <= 1'b1;
                started <= batch != 32'd0;
                to_read <= batch;
                to_write <= batch;
                reading <= batch != 32'd0;
            end
        end else begin
            if (vector_in) to_read <= to_read - 32'd1;
            if (vector_in && to_read == 32'd1) reading <= 1'b0;
            if (wrote) to_write <= to_write - 32'd1;
            if (to_write == 32'd0 || (wrote && to_write == 32'd1)) begin
                running <= 1'b0;
                done <= 1'b1;
            end
        end
    end
endmodule
