// Writes activation vectors into a channel (docs/engine.md). The producer offers, step by step,
// at most one new item per lane; each lane's newest item is held back until the next one (or the
// end of the vector) tells whether it is the lane's last. `finish` writes the held items with
// `last` set, then the mask of the lanes that received items.
module fg_lane_writer #(
    parameter integer LANES = 1,
    parameter integer IDX_W = 1
) (
    input  wire                      clk,
    input  wire                      rst,
    input  wire [LANES-1:0]          new_valid,     // lanes with a new item in this step
    input  wire [LANES*PAYLOAD-1:0]  new_item,      // per lane {index, value}
    input  wire                      step,          // the producer takes the step this cycle
    output wire                      step_ready,    // every lane that must write can
    input  wire                      finish,        // end the vector (held until finished)
    output wire                      finished,      // pulse: the vector's mask has been written
    output wire [LANES*ITEM_W-1:0]   lane_data,
    output wire [LANES-1:0]          lane_valid,
    input  wire [LANES-1:0]          lane_ready,
    output wire [LANES-1:0]          mask_data,
    output wire                      mask_valid,
    input  wire                      mask_ready
);
    localparam integer VALUE_W = 16;  // activations travel as 16-bit values (docs/engine.md)
    localparam integer PAYLOAD = IDX_W + VALUE_W;  // {index, value}
    localparam integer ITEM_W = 1 + PAYLOAD;  // {last, index, value}

    reg [LANES-1:0] held_valid;
    reg [LANES*PAYLOAD-1:0] held;
    reg [LANES-1:0] flushed;     // lanes whose last item has been written
    wire [LANES-1:0] displaced = new_valid & held_valid;   // held items a step pushes out
    wire [LANES-1:0] to_flush = held_valid & ~flushed;
    wire flushing = finish && (to_flush != {LANES{1'b0}});

    assign step_ready = &(~displaced | lane_ready);
    assign lane_valid = finish ? to_flush : (displaced & {LANES{step}});
    assign mask_data = held_valid;
    assign mask_valid = finish && !flushing;
    assign finished = mask_valid && mask_ready;

    genvar g;
    generate
        for (g = 0; g < LANES; g = g + 1) begin : g_lane
            assign lane_data[g*ITEM_W +: ITEM_W] = {finish, held[g*PAYLOAD +: PAYLOAD]};
            always @(posedge clk) begin
                if (step && new_valid[g]) held[g*PAYLOAD +: PAYLOAD] <= new_item[g*PAYLOAD +: PAYLOAD];
            end
        end
    endgenerate

    always @(posedge clk) begin
        if (rst) begin
            held_valid <= {LANES{1'b0}};
            flushed <= {LANES{1'b0}};
        end else if (finished) begin
            held_valid <= {LANES{1'b0}};
            flushed <= {LANES{1'b0}};
        end else if (finish) begin
            flushed <= flushed | (lane_valid & lane_ready);
        end else if (step) begin
            held_valid <= held_valid | new_valid;
        end
    end
endmodule
