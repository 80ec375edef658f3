// P processing elements in lock step: multiply-accumulate of weight beats into two accumulator
// banks per lane, and the drain that turns a full bank into the next activation vector.
//
// MAC pipeline (never stalls): M0 inputs (a beat and its activation) -> M1 product and accumulator
// read -> write back. A hit on the local address written in the previous cycle is forwarded.
// Banks ping-pong: the front end fills issue_bank while the drain empties the other one.
// Drain pipeline (stalls on back-pressure): read acc and bias -> requantize -> write the outputs
// (nonzero items through a lane writer, or dense beats), clearing each accumulator as it is read.
module fg_pe_array #(
    parameter integer P = 1,
    parameter integer ADDRESSES = 1,    // accumulator entries per PE and bank: local addresses
    parameter integer LOCAL_W = 1,      // the slot's local address field
    parameter integer W_BITS = 8,
    parameter integer ACC_W = 32,
    parameter integer IDX_W = 8,        // index width of the output items
    parameter integer BIAS_ROWS = 1,
    parameter BIAS_FILE = "",
    parameter BIAS_STYLE = "block",     // memory kinds, as the engine plan chose them
    parameter ACC_STYLE = "block"
) (
    input  wire                         clk,
    input  wire                         rst,
    // MAC input
    input  wire                         mac_valid,      // a weight beat this cycle
    input  wire                         mac_eov,        // the vector ends with this cycle
    input  wire                         mac_bank,
    input  wire [VALUE_W-1:0]           mac_x,
    input  wire [P*SLOT_W-1:0]          mac_entries,    // per PE a slot {valid, local, weight}
    // bank bookkeeping for the front end
    input  wire                         vector_issued,  // the issue bank's vector has been sent
    output reg                          issue_bank,
    output wire                         issue_ok,
    // drain configuration
    input  wire [5:0]                   cfg_shift,
    input  wire [VALUE_W-1:0]           cfg_lo,
    input  wire [VALUE_W-1:0]           cfg_hi,
    input  wire [31:0]                  cfg_n_out,
    input  wire [31:0]                  cfg_addresses,
    input  wire [BIAS_AW-1:0]           cfg_bias_base,
    input  wire                         cfg_dense,
    // sparse drain output: a channel of P lanes and its mask FIFO
    output wire [P*ITEM_W-1:0]          lane_data,
    output wire [P-1:0]                 lane_valid,
    input  wire [P-1:0]                 lane_ready,
    output wire [P-1:0]                 mask_data,
    output wire                         mask_valid,
    input  wire                         mask_ready,
    // dense drain output
    output wire [P*VALUE_W-1:0]         dense_data,
    output wire                         dense_last,
    output wire                         dense_valid,
    input  wire                         dense_ready,
    output reg                          draining,
    output wire                         drain_waiting,  // the drain is held up by full outputs
    output reg                          drain_done
);
    localparam integer SLOT_W = 1 + LOCAL_W + W_BITS;  // {valid, local, weight}
    localparam integer VALUE_W = 16;  // activations travel as 16-bit values (docs/engine.md)
    localparam integer ITEM_W = 1 + IDX_W + VALUE_W;
    localparam integer PROD_W = VALUE_W + W_BITS;
    // The clamp compares against 16-bit bounds: at least one bit wider than them.
    localparam integer CMP_W = (ACC_W > VALUE_W) ? ACC_W : VALUE_W + 1;
    localparam integer BIAS_AW = (BIAS_ROWS > 1) ? $clog2(BIAS_ROWS) : 1;
    localparam integer PB = (P > 1) ? $clog2(P) : 0;

    // ---- bank bookkeeping --------------------------------------------------------------------
    reg [1:0] owned;      // the bank holds a vector that is not drained yet
    reg [1:0] filled;     // ... and all of its beats have been accumulated
    reg drain_bank;
    reg m1_eov;
    reg m1_bank;
    wire finish;          // the drain of drain_bank completes this cycle

    assign issue_ok = !owned[issue_bank];

    always @(posedge clk) begin
        if (rst) begin
            owned <= 2'b00;
            filled <= 2'b00;
            issue_bank <= 1'b0;
        end else begin
            if (vector_issued) begin
                owned[issue_bank] <= 1'b1;
                issue_bank <= !issue_bank;
            end
            if (m1_eov) filled[m1_bank] <= 1'b1;
            if (finish) begin
                owned[drain_bank] <= 1'b0;
                filled[drain_bank] <= 1'b0;
            end
        end
    end

    // ---- drain control -------------------------------------------------------------------------
    reg [31:0] a;               // next local address to read
    reg        d1_valid;
    reg [31:0] d1_a;
    reg        d2_valid;
    reg [31:0] d2_a;
    reg        closing;         // every address drained: the lane writer ends the vector
    wire       stall;
    wire       issue_read = draining && !closing && (a != cfg_addresses) && !stall;
    wire       advance = !stall;

    // ---- per-lane datapath ---------------------------------------------------------------------
    wire [P*VALUE_W-1:0] d1_y;  // requantized outputs of the d1 stage
    reg  [P*VALUE_W-1:0] d2_y;
    wire [P-1:0]    new_valid;  // lanes whose d2 output is a real, nonzero output
    wire [P*(IDX_W+VALUE_W)-1:0] new_item;

    genvar g;
    generate
        for (g = 0; g < P; g = g + 1) begin : g_lane
            wire [SLOT_W-1:0]  entry = mac_entries[g*SLOT_W +: SLOT_W];
            wire               e_valid = entry[SLOT_W-1];
            wire [LOCAL_W-1:0] e_local = entry[W_BITS +: LOCAL_W];
            wire signed [W_BITS-1:0] e_w = entry[W_BITS-1:0];

            reg signed [PROD_W-1:0] m1_prod;
            reg              m1_valid;
            reg  [LOCAL_W-1:0] m1_loc;
            reg  [ACC_W-1:0] fwd_sum;
            reg  [LOCAL_W-1:0] fwd_local;
            reg              fwd_valid;
            reg              fwd_bank;
            wire [ACC_W-1:0] rd0;
            wire [ACC_W-1:0] rd1;
            wire [ACC_W-1:0] mac_rd = m1_bank ? rd1 : rd0;
            wire             hit = fwd_valid && fwd_bank == m1_bank && fwd_local == m1_loc;
            // The accumulator is the layer's exact width: a product wider than it wraps, which
            // is exact because every partial sum fits (docs/numerics.md).
            wire [ACC_W-1:0] product;
            fg_resize #(.IN_W(PROD_W), .OUT_W(ACC_W)) u_product (.in(m1_prod), .out(product));
            wire [ACC_W-1:0] sum = (hit ? fwd_sum : mac_rd) + product;

            always @(posedge clk) begin
                m1_prod <= $signed(mac_x) * e_w;
                m1_valid <= mac_valid && e_valid;
                m1_loc <= e_local;
                fwd_sum <= sum;
                fwd_local <= m1_loc;
                fwd_valid <= m1_valid;
                fwd_bank <= m1_bank;
            end

            // Bank b belongs to the drain while it drains b, to the MAC pipeline otherwise.
            wire drain_on0 = draining && !drain_bank;
            wire drain_on1 = draining && drain_bank;
            wire [LOCAL_W-1:0] drain_addr = a[LOCAL_W-1:0];
            fg_ram #(.WIDTH(ACC_W), .DEPTH(ADDRESSES), .STYLE(ACC_STYLE)) u_bank0 (
                .clk(clk),
                .we(drain_on0 ? issue_read : (m1_valid && !m1_bank)),
                .waddr(drain_on0 ? drain_addr : m1_loc),
                .wdata(drain_on0 ? {ACC_W{1'b0}} : sum),
                .re(drain_on0 ? issue_read : (mac_valid && !mac_bank)),
                .raddr(drain_on0 ? drain_addr : e_local),
                .rdata(rd0)
            );
            fg_ram #(.WIDTH(ACC_W), .DEPTH(ADDRESSES), .STYLE(ACC_STYLE)) u_bank1 (
                .clk(clk),
                .we(drain_on1 ? issue_read : (m1_valid && m1_bank)),
                .waddr(drain_on1 ? drain_addr : m1_loc),
                .wdata(drain_on1 ? {ACC_W{1'b0}} : sum),
                .re(drain_on1 ? issue_read : (mac_valid && mac_bank)),
                .raddr(drain_on1 ? drain_addr : e_local),
                .rdata(rd1)
            );

            // Requantize (docs/numerics.md): clamp((acc + bias + 2^(s-1)) >>> s, lo, hi).
            wire [ACC_W-1:0] bias = bias_row[g*ACC_W +: ACC_W];
            wire [ACC_W-1:0] round = (cfg_shift == 6'd0) ? {ACC_W{1'b0}}
                                     : ({{(ACC_W-1){1'b0}}, 1'b1} << (cfg_shift - 6'd1));
            wire signed [ACC_W-1:0] total = $signed((drain_bank ? rd1 : rd0) + bias + round);
            wire signed [ACC_W-1:0] shifted = total >>> cfg_shift;
            wire [CMP_W-1:0] wide;
            fg_resize #(.IN_W(ACC_W), .OUT_W(CMP_W)) u_wide (.in(shifted), .out(wide));
            wire signed [CMP_W-1:0] lo = {{(CMP_W-VALUE_W){cfg_lo[VALUE_W-1]}}, cfg_lo};
            wire signed [CMP_W-1:0] hi = {{(CMP_W-VALUE_W){cfg_hi[VALUE_W-1]}}, cfg_hi};
            // The clamp bounds are 16-bit values, so the clamped result's upper bits are its sign.
            /* verilator lint_off UNUSEDSIGNAL */
            wire signed [CMP_W-1:0] clamped = ($signed(wide) < lo) ? lo : ($signed(wide) > hi) ? hi : $signed(wide);
            /* verilator lint_on UNUSEDSIGNAL */
            assign d1_y[g*VALUE_W +: VALUE_W] = clamped[VALUE_W-1:0];

            // Sparse output: nonzero values of real outputs (j < n_out).
            wire [31:0] j = (d2_a << PB) | g;
            assign new_valid[g] = !cfg_dense && (d2_y[g*VALUE_W +: VALUE_W] != {VALUE_W{1'b0}}) && (j < cfg_n_out);
            assign new_item[g*(IDX_W+VALUE_W) +: IDX_W+VALUE_W] = {j[IDX_W-1:0], d2_y[g*VALUE_W +: VALUE_W]};
        end
    endgenerate

    always @(posedge clk) begin
        m1_eov <= mac_eov;
        m1_bank <= mac_bank;
    end

    // Bias rows: row (cfg_bias_base + a) holds the P lanes' biases of local address a.
    wire [P*ACC_W-1:0] bias_row;
    fg_rom #(.WIDTH(P*ACC_W), .DEPTH(BIAS_ROWS), .STYLE(BIAS_STYLE), .INIT(BIAS_FILE)) u_bias (
        .clk(clk),
        .en(issue_read),
        .addr(cfg_bias_base + a[BIAS_AW-1:0]),
        .data(bias_row)
    );

    assign dense_data = d2_y;
    assign dense_valid = cfg_dense && d2_valid;
    assign dense_last = (d2_a == cfg_addresses - 32'd1);

    wire step_ready;
    wire written;
    fg_lane_writer #(.LANES(P), .IDX_W(IDX_W)) u_writer (
        .clk(clk), .rst(rst),
        .new_valid(new_valid), .new_item(new_item), .step(d2_valid && !stall && !cfg_dense),
        .step_ready(step_ready), .finish(closing), .finished(written),
        .lane_data(lane_data), .lane_valid(lane_valid), .lane_ready(lane_ready),
        .mask_data(mask_data), .mask_valid(mask_valid), .mask_ready(mask_ready)
    );

    assign stall = d2_valid && (cfg_dense ? !dense_ready : !step_ready);
    // Every address has been read and the last outputs leave this cycle.
    wire emptied = draining && !closing && a == cfg_addresses && !d1_valid && !stall;
    assign finish = (emptied && cfg_dense) || written;
    assign drain_waiting = stall || (closing && (|(lane_valid & ~lane_ready) || (mask_valid && !mask_ready)));

    always @(posedge clk) begin
        drain_done <= finish;
        if (rst) begin
            draining <= 1'b0;
            drain_bank <= 1'b0;
            closing <= 1'b0;
            d1_valid <= 1'b0;
            d2_valid <= 1'b0;
            a <= 32'd0;
        end else if (!draining) begin
            if (filled[drain_bank]) begin
                draining <= 1'b1;
                a <= 32'd0;
            end
        end else if (finish) begin
            draining <= 1'b0;
            drain_bank <= !drain_bank;
            closing <= 1'b0;
            d1_valid <= 1'b0;
            d2_valid <= 1'b0;
        end else if (!closing) begin
            if (advance) begin
                d1_valid <= issue_read;
                d1_a <= a;
                d2_valid <= d1_valid;
                d2_a <= d1_a;
                d2_y <= d1_y;
                if (issue_read) a <= a + 32'd1;
            end
            if (emptied) closing <= 1'b1;
        end
    end
endmodule
